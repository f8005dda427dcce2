// Package version is the one home of what build of cairn this is: the
// release it calls itself, and the commit and Go toolchain it was built
// from (from the binary's build information). `cairn version`, the
// runtime's and reconcile's cairn_build_info metric and the default
// cairn image tag all read it here.
package version
