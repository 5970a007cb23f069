//go:build !unix

package parsetest

func lockFile(string) (func(), error) {
	return nil, &unavailableError{"the Parse Server test harness needs a Unix file lock"}
}
