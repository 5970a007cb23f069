// Package version holds the release version, a leaf that the server, the
// CLI and the release builder read without importing one another (release
// builds stamp it with -ldflags -X; docs/release.md "Release builds").
package version

// Version is reported in initialize, by --version and in the bundles.
var Version = "0.1.0"
