// Command extract prints, as a JSON list, every Prometheus metric a Go module registers
// through operatorpkg's NewPrometheusCounter/Gauge/Histogram/Summary (the way Karpenter and
// karpenter-provider-aws register all of theirs): the full name (namespace, subsystem and
// name joined as prometheus.BuildFQName joins them), the type, the label names and the
// histogram buckets (the expression and, when it can be evaluated statically, its values).
//
// Usage: go run extract.go MODULE_DIR...
//
// Constants are resolved across the module's packages (metrics.Namespace, a package's label
// constants). A label list built at run time (Karpenter's node metrics add the cloud
// provider's well-known labels) keeps its static part in "labels" and the expression it could
// not evaluate in "dynamic_labels". Only the standard library is used, so `go run` needs no
// module download. Called by tools/karpenter_metrics.py.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

type metric struct {
	Name          string    `json:"name"`
	Type          string    `json:"type"`
	Labels        []string  `json:"labels"`
	DynamicLabels string    `json:"dynamic_labels,omitempty"`
	Buckets       string    `json:"buckets,omitempty"`
	BucketValues  []float64 `json:"bucket_values,omitempty"`
	Objectives    string    `json:"objectives,omitempty"`
	Module        string    `json:"module"`
	File          string    `json:"file"`
}

type decl struct {
	expr ast.Expr
	file *ast.File
	pkg  string
}

// universe holds the declarations of every module read, so a module's metrics can use
// another's constants (karpenter-provider-aws names its metrics with Karpenter's
// metrics.Namespace).
type universe struct {
	fset     *token.FileSet
	consts   map[string]decl          // "pkgpath.Name" -> value expression
	funcs    map[string]*ast.FuncDecl // "pkgpath.Name"
	funcFile map[*ast.FuncDecl]decl
}

type module struct {
	*universe
	path, dir string
	files     []decl
}

// defBuckets is client_golang's prometheus.DefBuckets (a histogram without Buckets uses it).
var defBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

var durations = map[string]float64{"Nanosecond": 1e-9, "Microsecond": 1e-6, "Millisecond": 1e-3, "Second": 1, "Minute": 60, "Hour": 3600}

var kinds = map[string]string{
	"NewPrometheusCounter": "counter", "NewPrometheusGauge": "gauge",
	"NewPrometheusHistogram": "histogram", "NewPrometheusSummary": "summary",
}

func main() {
	u := &universe{fset: token.NewFileSet(), consts: map[string]decl{},
		funcs: map[string]*ast.FuncDecl{}, funcFile: map[*ast.FuncDecl]decl{}}
	mods := []*module{}
	for _, dir := range os.Args[1:] {
		m, err := load(u, dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		mods = append(mods, m)
	}
	out := []metric{}
	for _, m := range mods {
		out = append(out, m.metrics()...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func modulePath(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s/go.mod: no module line", dir)
}

func skipDir(rel string, name string) bool {
	return rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		name == "testdata" || name == "vendor" || name == "hack" || name == "test")
}

func load(u *universe, dir string) (*module, error) {
	path, err := modulePath(dir)
	if err != nil {
		return nil, err
	}
	m := &module{universe: u, path: path, dir: dir}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		return m.parse(p, filepath.ToSlash(filepath.Dir(rel)))
	})
	return m, err
}

func (m *module) parse(p, relDir string) error {
	f, err := parser.ParseFile(m.fset, p, nil, 0)
	if err != nil {
		return err
	}
	pkg := m.path
	if relDir != "." {
		pkg += "/" + relDir
	}
	here := decl{file: f, pkg: pkg}
	m.files = append(m.files, here)
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			m.addValues(d, here)
		case *ast.FuncDecl:
			if d.Recv == nil {
				m.funcs[pkg+"."+d.Name.Name] = d
				m.funcFile[d] = here
			}
		}
	}
	return nil
}

// addValues records package-level constants and single-valued variables (a variable such as
// dayDuration is read only for bucket arithmetic).
func (m *module) addValues(d *ast.GenDecl, here decl) {
	if d.Tok != token.CONST && d.Tok != token.VAR {
		return
	}
	for _, s := range d.Specs {
		vs, ok := s.(*ast.ValueSpec)
		if !ok || len(vs.Values) != len(vs.Names) {
			continue
		}
		for i, n := range vs.Names {
			m.consts[here.pkg+"."+n.Name] = decl{expr: vs.Values[i], file: here.file, pkg: here.pkg}
		}
	}
}

func (m *module) text(e ast.Node) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, m.fset, e)
	return b.String()
}

// importPath is the import path an identifier qualifies in file f (its alias or last element).
func importPath(f *ast.File, name string) string {
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		alias := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			alias = imp.Name.Name
		}
		if alias == name {
			return p
		}
	}
	return ""
}

// lookup resolves an identifier or pkg.Name selector to its declaration, or reports false.
func (m *module) lookup(e ast.Expr, at decl) (decl, bool) {
	switch e := e.(type) {
	case *ast.Ident:
		d, ok := m.consts[at.pkg+"."+e.Name]
		return d, ok
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			d, ok := m.consts[importPath(at.file, x.Name)+"."+e.Sel.Name]
			return d, ok
		}
	}
	return decl{}, false
}

func (m *module) function(e ast.Expr, at decl) (*ast.FuncDecl, bool) {
	switch e := e.(type) {
	case *ast.Ident:
		f, ok := m.funcs[at.pkg+"."+e.Name]
		return f, ok
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			f, ok := m.funcs[importPath(at.file, x.Name)+"."+e.Sel.Name]
			return f, ok
		}
	}
	return nil, false
}

// returned is the expression a function with a single return statement returns.
func returned(f *ast.FuncDecl) (ast.Expr, bool) {
	if f.Body == nil {
		return nil, false
	}
	var out ast.Expr
	n := 0
	ast.Inspect(f.Body, func(x ast.Node) bool {
		if r, ok := x.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
			out, n = r.Results[0], n+1
		}
		return true
	})
	return out, n == 1
}

func (m *module) str(e ast.Expr, at decl) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		}
	case *ast.BinaryExpr:
		a, ok1 := m.str(e.X, at)
		b, ok2 := m.str(e.Y, at)
		return a + b, ok1 && ok2 && e.Op == token.ADD
	case *ast.Ident, *ast.SelectorExpr:
		if d, ok := m.lookup(e, at); ok {
			return m.str(d.expr, d)
		}
	}
	return "", false
}

// labels evaluates a label-name list: static names, and the text of a part it cannot evaluate.
func (m *module) labels(e ast.Expr, at decl) ([]string, string) {
	switch e := e.(type) {
	case *ast.CompositeLit:
		out := []string{}
		for _, el := range e.Elts {
			s, ok := m.str(el, at)
			if !ok {
				return out, m.text(e)
			}
			out = append(out, s)
		}
		return out, ""
	case *ast.CallExpr:
		return m.labelCall(e, at)
	}
	return []string{}, m.text(e)
}

func (m *module) labelCall(e *ast.CallExpr, at decl) ([]string, string) {
	if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "append" && len(e.Args) > 0 {
		out, dynamic := m.labels(e.Args[0], at)
		for _, a := range e.Args[1:] {
			s, ok := m.str(a, at)
			if !ok {
				return out, strings.TrimPrefix(dynamic+", "+m.text(a), ", ")
			}
			out = append(out, s)
		}
		return out, dynamic
	}
	if f, ok := m.function(e.Fun, at); ok && len(e.Args) == 0 {
		if r, ok := returned(f); ok {
			return m.labels(r, m.funcFile[f])
		}
	}
	return []string{}, m.text(e)
}

func (m *module) num(e ast.Expr, at decl) (float64, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		v, err := strconv.ParseFloat(e.Value, 64)
		return v, err == nil && (e.Kind == token.INT || e.Kind == token.FLOAT)
	case *ast.ParenExpr:
		return m.num(e.X, at)
	case *ast.BinaryExpr:
		a, ok1 := m.num(e.X, at)
		b, ok2 := m.num(e.Y, at)
		if e.Op == token.MUL {
			return a * b, ok1 && ok2
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && importPath(at.file, x.Name) == "time" {
			v, ok := durations[e.Sel.Name]
			return v, ok
		}
		if d, ok := m.lookup(e, at); ok {
			return m.num(d.expr, d)
		}
	case *ast.Ident:
		if d, ok := m.lookup(e, at); ok {
			return m.num(d.expr, d)
		}
	case *ast.CallExpr: // (duration).Seconds() of a duration in seconds
		if s, ok := e.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Seconds" && len(e.Args) == 0 {
			return m.num(s.X, at)
		}
	}
	return 0, false
}

func (m *module) buckets(e ast.Expr, at decl) ([]float64, bool) {
	switch e := e.(type) {
	case *ast.CompositeLit:
		out := []float64{}
		for _, el := range e.Elts {
			v, ok := m.num(el, at)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && e.Sel.Name == "DefBuckets" &&
			strings.HasSuffix(importPath(at.file, x.Name), "prometheus/client_golang/prometheus") {
			return defBuckets, true
		}
	case *ast.CallExpr:
		return m.bucketCall(e, at)
	}
	return nil, false
}

func (m *module) bucketCall(e *ast.CallExpr, at decl) ([]float64, bool) {
	if s, ok := e.Fun.(*ast.SelectorExpr); ok && len(e.Args) == 3 &&
		(s.Sel.Name == "ExponentialBuckets" || s.Sel.Name == "LinearBuckets") {
		start, ok1 := m.num(e.Args[0], at)
		step, ok2 := m.num(e.Args[1], at)
		count, ok3 := m.num(e.Args[2], at)
		if !ok1 || !ok2 || !ok3 {
			return nil, false
		}
		out := make([]float64, int(count))
		for i := range out {
			if s.Sel.Name == "ExponentialBuckets" {
				out[i] = start * math.Pow(step, float64(i))
			} else {
				out[i] = start + step*float64(i)
			}
		}
		return out, true
	}
	if f, ok := m.function(e.Fun, at); ok && len(e.Args) == 0 {
		if r, ok := returned(f); ok {
			return m.buckets(r, m.funcFile[f])
		}
	}
	return nil, false
}

func (m *module) metrics() []metric {
	out := []metric{}
	for _, here := range m.files {
		ast.Inspect(here.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if x, ok := m.metric(call, here); ok {
				out = append(out, x)
			}
			return true
		})
	}
	return out
}

func (m *module) metric(call *ast.CallExpr, here decl) (metric, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || kinds[sel.Sel.Name] == "" || len(call.Args) != 3 {
		return metric{}, false
	}
	opts, ok := call.Args[1].(*ast.CompositeLit)
	if !ok {
		return metric{}, false
	}
	file, _ := filepath.Rel(m.dir, m.fset.Position(call.Pos()).Filename)
	x := metric{Type: kinds[sel.Sel.Name], Module: m.path, File: filepath.ToSlash(file)}
	parts := map[string]string{}
	for _, el := range opts.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key := kv.Key.(*ast.Ident).Name
		switch key {
		case "Namespace", "Subsystem", "Name":
			s, ok := m.str(kv.Value, here)
			if !ok {
				s = "<" + m.text(kv.Value) + ">"
			}
			parts[key] = s
		case "Buckets":
			x.Buckets = m.text(kv.Value)
			x.BucketValues, _ = m.buckets(kv.Value, here)
		case "Objectives":
			x.Objectives = m.text(kv.Value)
		}
	}
	if x.Type == "histogram" && x.Buckets == "" {
		x.Buckets, x.BucketValues = "prometheus.DefBuckets", defBuckets
	}
	for _, k := range []string{"Namespace", "Subsystem", "Name"} {
		if parts[k] != "" {
			x.Name = strings.TrimPrefix(x.Name+"_"+parts[k], "_")
		}
	}
	x.Labels, x.DynamicLabels = m.labels(call.Args[2], here)
	return x, true
}
