// Package config reads muster.toml (ARCHITECTURE.md §2.4) into muster.Config, and
// the --crew flags that add executors to it.
//
// Every problem names the file and line of the key at fault, and an
// unknown key suggests the nearest known one. Executors and gates keep
// the order of the file. See docs/planfile.md for every key.
package config
