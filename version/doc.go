// Package version is the one home of what build of cairn this is: the
// release it calls itself, the commit it was built from and that
// commit's date (stamped by -ldflags in a release build, else read from
// the binary's build information), and the Go toolchain. `cairn
// version`, the runtime's and reconcile's cairn_build_info metric and the
// default cairn image tag all read it here.
package version
