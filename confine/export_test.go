package confine

// Compatible is compatible, for the tests of package confine_test.
var Compatible = compatible

// Usage is the ConfineCommand's usage line, which lists its options.
const Usage = usage
