module github.com/muster-run/muster

go 1.26.8

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/goccy/go-yaml v1.19.2
	github.com/pelletier/go-toml/v2 v2.4.3
)
