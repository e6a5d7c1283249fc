// Command _gen writes the assembly files of the variants packages that are
// generated rather than written by hand: one Go function a file, built with
// avo (github.com/mmcloughlin/avo) from one description of each kernel, so
// that twin kernels (the AVX-512BW and VNNI forms of a matvec, the prefetch
// form, the four-row form) come from the same source. The blocks that the
// kernels of a package repeat are written once, as macros of its generated
// header macros_amd64.h (macro.go), and the kernels invoke them.
//
// It is its own module so that avo is not a dependency of the engine; run
// it through go generate in the package it writes (see variants/avx512's
// doc.go), or by hand:
//
//	go run -C variants/_gen . -dir ../avx512
//
// With no file names it writes every file it knows for that directory;
// -list prints them.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
)

// file is one generated assembly file: its package directory's base name,
// its file name and the function that builds it.
type file struct {
	pkg, name string
	build     func()        // through avo
	text      func() []byte // or as text
}

var files []file

func register(pkg, name string, b func()) {
	files = append(files, file{pkg: pkg, name: name, build: b})
}

func registerText(pkg, name string, t func() []byte) {
	files = append(files, file{pkg: pkg, name: name, text: t})
}

func main() {
	dir := flag.String("dir", ".", "package directory to write into")
	list := flag.Bool("list", false, "list the files generated for -dir and stop")
	flag.Parse()
	pkg := filepath.Base(mustAbs(*dir))
	want := map[string]bool{}
	for _, n := range flag.Args() {
		want[n] = true
	}
	var names []string
	for _, f := range files {
		if f.pkg != pkg || (len(want) > 0 && !want[f.name]) {
			continue
		}
		names = append(names, f.name)
		if *list {
			continue
		}
		if err := generate(f, filepath.Join(*dir, f.name)); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", f.name, err)
			os.Exit(1)
		}
	}
	if len(names) == 0 {
		fmt.Fprintf(os.Stderr, "no generated files for package %s\n", pkg)
		os.Exit(1)
	}
	if *list {
		sort.Strings(names)
		fmt.Println(strings.Join(names, "\n"))
	}
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

// generate builds f in a fresh avo context and writes it to path.
func generate(f file, path string) error {
	curPkg = f.pkg
	usedHeaders = map[string]bool{}
	if f.text != nil {
		return os.WriteFile(path, f.text(), 0o644)
	}
	a = build.NewContext()
	a.ConstraintExpr("!noasm")
	f.build()
	ir, err := a.Result()
	if err != nil {
		if list, ok := err.(build.ErrorList); ok {
			for _, e := range list {
				fmt.Fprintln(os.Stderr, e)
			}
		}
		return err
	}
	if err := pass.Compile.Execute(ir); err != nil {
		return err
	}
	addIncludes(ir)
	cfg := printer.Config{
		Argv: []string{"go", "run", "./variants/_gen", "-dir", "variants/" + f.pkg},
		Pkg:  f.pkg,
	}
	b, err := printer.NewGoAsm(cfg).Print(ir)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
