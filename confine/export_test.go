package confine

// Compatible is compatible, for the tests of package confine_test.
var Compatible = compatible
