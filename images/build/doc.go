// Command imagebuild builds the image archives `make image` writes under
// .cache/images: cairn, PostgreSQL per major, the pg_upgrade image of two
// majors and etcd per minor, from unpacked Debian roots
// (images/build/fetch-debs) and the binaries this repository builds,
// without a Docker engine. go-containerregistry makes the images and the
// docker-archive files; this tool makes the layers' trees (owners, modes,
// one date) and checks each archive by running its programs through the
// image's own loader (docs/images.md).
//
// It is a module of its own, so that cairn's module does not require
// go-containerregistry. Of cairn it imports the renderer alone, for the
// tags the rendered pods name; never the runtime or the publisher.
package main
