package promoted

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/ledger/ledgertest"
)

// TestConformance runs this package's variants (the matvec-loop matmuls
// and the per-token batched attention, the incumbents) through the ledger's
// conformance suite.
func TestConformance(t *testing.T) { ledgertest.Run(t) }

// TestEveryVariantInTheSuite: this package links every variant family, so
// the default registry holds every variant built for this machine's
// architecture and tags. Each must belong to a package whose tests run the
// conformance suite (a Test function calling ledgertest.Run), so that a new
// variant, or a new family, cannot escape it.
func TestEveryVariantInTheSuite(t *testing.T) {
	const module = "github.com/damascus-llm/damascus/"
	all := ledger.All()
	if len(all) == 0 {
		t.Fatal("no variant registered")
	}
	runs := map[string]bool{} // package import path → its tests call ledgertest.Run
	byPkg := map[string]int{}
	for _, v := range all {
		pkg := v.Package()
		byPkg[pkg]++
		if _, seen := runs[pkg]; seen {
			continue
		}
		rel, ok := strings.CutPrefix(pkg, module)
		if !ok {
			t.Errorf("variant %s: registered by %q, outside the module", v.ID(), pkg)
			runs[pkg] = false
			continue
		}
		runs[pkg] = callsRun(t, filepath.Join("..", filepath.FromSlash(rel)))
	}
	for _, v := range all {
		if !runs[v.Package()] {
			t.Errorf("variant %s: no test of package %s calls ledgertest.Run", v.ID(), v.Package())
		}
	}
	for pkg, n := range byPkg {
		t.Logf("%3d variants registered by %s", n, pkg)
	}
}

// callsRun reports whether a Test function in dir's test files calls
// ledgertest.Run.
func callsRun(t *testing.T, dir string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			found := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Run" {
						if x, ok := s.X.(*ast.Ident); ok && x.Name == "ledgertest" {
							found = true
						}
					}
				}
				return !found
			})
			if found {
				return true
			}
		}
	}
	return false
}
