package consultation

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestFilesDependDownward: the package's files read top-down, each using only what the
// files below it declare: no chain of files uses its own start's top-level names (types,
// functions, variables, constants). A use is a name not behind a selector, not a field
// name and not a composite literal's key, so a field or method named like another file's
// type does not count; methods are reached through their types.
func TestFilesDependDownward(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			if files[name], err = parser.ParseFile(fset, name, nil, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	declared := map[string]string{} // top-level name -> its file
	for name, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name != "init" {
					declared[d.Name.Name] = name
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declared[s.Name.Name] = name
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.Name != "_" {
								declared[n.Name] = name
							}
						}
					}
				}
			}
		}
	}
	uses := map[string]map[string]string{} // file -> file it uses -> a name it uses there
	for name, f := range files {
		skip := map[*ast.Ident]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				skip[n.Sel] = true
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok {
					skip[id] = true
				}
			case *ast.Field:
				for _, id := range n.Names {
					skip[id] = true
				}
			case *ast.Ident:
				// n.Obj is set for a name the file itself declares (a local, a parameter):
				// only the others can be another file's.
				if to := declared[n.Name]; to != "" && to != name && !skip[n] && n.Obj == nil {
					if uses[name] == nil {
						uses[name] = map[string]string{}
					}
					uses[name][to] = n.Name
				}
			}
			return true
		})
	}
	// A cycle is a file reached again from itself.
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, start := range names {
		if path := cycle(uses, start); path != nil {
			t.Errorf("the files use each other in a circle: %s", strings.Join(path, " -> "))
		}
	}
}

// cycle returns a chain of uses from start back to start, with the names used, or nil.
func cycle(uses map[string]map[string]string, start string) []string {
	seen := map[string]bool{}
	var walk func(file string, path []string) []string
	walk = func(file string, path []string) []string {
		tos := make([]string, 0, len(uses[file]))
		for to := range uses[file] {
			tos = append(tos, to)
		}
		slices.Sort(tos)
		for _, to := range tos {
			step := append(slices.Clip(path), file+" ("+uses[file][to]+")")
			if to == start {
				return append(step, to)
			}
			if !seen[to] {
				seen[to] = true
				if p := walk(to, step); p != nil {
					return p
				}
			}
		}
		return nil
	}
	return walk(start, nil)
}
