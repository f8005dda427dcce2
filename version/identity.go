package version

import (
	"bytes"
	"debug/elf"
	"os"
	"sync"
)

// Identity names this build of the program exactly enough that two builds
// from different sources never share it: what keys the render cache on
// disk (renderer.DiskCache), whose entries only the build that wrote them
// may read. It is the Go build ID of the running executable where the
// system has one (ELF), else the commit the binary was built from when
// its work tree had no changes; nil when neither is known (a build of a
// modified work tree on a system without ELF), and then nothing may be
// cached across processes.
func Identity() []byte {
	identityOnce.Do(func() { identity = readIdentity() })
	return identity
}

var (
	identityOnce sync.Once
	identity     []byte
)

func readIdentity() []byte {
	if exe, err := os.Executable(); err == nil {
		if id := elfBuildID(exe); id != nil {
			return append([]byte("go-build-id:"), id...)
		}
	}
	if i := Get(); i.Revision != "" && !i.Modified {
		return []byte("commit:" + i.Revision + " " + i.GoVersion + " " + i.Platform + " " + i.Release)
	}
	return nil
}

// elfBuildID reads the Go build ID note of an ELF executable; nil when
// it is not one or has none.
func elfBuildID(path string) []byte {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil || s.Size > 1<<12 {
		return nil
	}
	data, err := s.Data()
	if err != nil || len(data) < 16 {
		return nil
	}
	// An ELF note: name size, description size, type, then the name
	// ("Go\x00\x00") and the description (the build ID).
	order := f.ByteOrder
	namesz, descsz := order.Uint32(data[0:4]), order.Uint32(data[4:8])
	if namesz != 4 || !bytes.Equal(data[12:16], []byte("Go\x00\x00")) || uint64(descsz) > uint64(len(data)-16) || descsz == 0 {
		return nil
	}
	return bytes.Clone(data[16 : 16+descsz])
}
