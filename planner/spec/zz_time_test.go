package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZZTime(t *testing.T) {
	files, _ := filepath.Glob("testdata/fuzz/FuzzDecode/*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		s := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[1])
		s = strings.TrimSuffix(strings.TrimPrefix(s, "[]byte("), ")")
		data, err := strconv.Unquote(s)
		if err != nil {
			t.Fatal(f, err)
		}
		start := time.Now()
		_, derr := Decode("f.yaml", []byte(data))
		el := time.Since(start)
		msg := fmt.Sprint(derr)
		if len(msg) > 150 { msg = msg[:150] }
		fmt.Printf("%v %d %s %s\n", el, len(data), filepath.Base(f), msg)
	}
}
