// Command trimkcm writes a go build -overlay that compiles Kubernetes'
// kube-controller-manager without the controllers a cluster with no nodes,
// no cloud, no volumes and no metrics server has no use for.
//
// A test cluster of dm's runs kube-apiserver and kube-controller-manager
// only: no kubelet ever runs a pod. The controllers that act on nodes,
// volumes, cloud resources, pod metrics and certificate requests find
// nothing to do there, but their packages (the volume plugins, and through
// the pod garbage collector the kubelet, cAdvisor and runc) are 286 of the
// 405 packages kube-controller-manager v1.31 compiles beyond kube-apiserver.
//
// The overlay changes the source of one package,
// k8s.io/kubernetes/cmd/kube-controller-manager/app, and only by removing:
// each dropped controller keeps its name, aliases and flags, so every
// --controllers value of the full program is still accepted, but its
// descriptor's init function becomes one that starts nothing and logs why;
// the functions and imports no longer reachable are then deleted, so the go
// command never compiles the packages only they used. Everything else is
// Kubernetes' own code, unchanged.
//
// The go command refuses overlays of files in the module cache, so the
// overlay places the package, with the command's main, in this tools module
// instead: at ./kube-controller-manager/app, a directory that exists only in
// the overlay. Run from the tools module (hack/kube),
//
//	go run ./trimkcm OUTDIR
//	go build -overlay OUTDIR/overlay.json ./kube-controller-manager
//
// trimkcm writes OUTDIR/overlay.json and the files it names.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The command, and its package whose source the overlay replaces.
const (
	command    = "k8s.io/kubernetes/cmd/kube-controller-manager"
	appPackage = command + "/app"
)

// dropped names the descriptor constructors of the controllers left out.
// Each needs something a test cluster of dm's does not have.
var dropped = []string{
	// Nodes (no kubelet runs): IPAM, node lifecycle, taint eviction, and the
	// pod garbage collector, whose package links the kubelet's eviction
	// manager and with it cAdvisor and runc.
	"newNodeIpamControllerDescriptor",
	"newNodeLifecycleControllerDescriptor",
	"newTaintEvictionControllerDescriptor",
	"newPodGarbageCollectorControllerDescriptor",
	// A cloud provider.
	"newServiceLBControllerDescriptor",
	"newNodeRouteControllerDescriptor",
	"newCloudNodeLifecycleControllerDescriptor",
	// Volumes: these link every in-tree volume plugin.
	"newPersistentVolumeBinderControllerDescriptor",
	"newPersistentVolumeAttachDetachControllerDescriptor",
	"newPersistentVolumeExpanderControllerDescriptor",
	"newEphemeralVolumeControllerDescriptor",
	"newResourceClaimControllerDescriptor",
	// A metrics server.
	"newHorizontalPodAutoscalerControllerDescriptor",
	// Certificate requests from kubelets.
	"newCertificateSigningRequestSigningControllerDescriptor",
	"newCertificateSigningRequestApprovingControllerDescriptor",
	"newCertificateSigningRequestCleanerControllerDescriptor",
	// Alpha, off unless its feature gate is on.
	"newStorageVersionMigratorControllerDescriptor",
}

// roots are the package's functions other packages call: the command's main
// calls only this one.
var roots = []string{"NewControllerManagerCommand"}

// stubName is the init function every dropped controller gets.
const stubName = "startControllerNotBuilt"

// stubFile is added to the package beside its own files.
const stubFile = `package app

import (
	"context"

	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"
)

// ` + stubName + ` is the init function of the controllers this program was
// built without (dm's hack/kube/trimkcm): it starts nothing, so the
// controller is skipped as one that is not enabled.
func ` + stubName + `(ctx context.Context, controllerContext ControllerContext, controllerName string) (controller.Interface, bool, error) {
	klog.FromContext(ctx).Info("Controller not built into this kube-controller-manager (dm's test build)", "controller", controllerName)
	return nil, false, nil
}
`

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: trimkcm OUTDIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "trimkcm:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	dir, files, err := packageFiles(appPackage)
	if err != nil {
		return err
	}
	names, err := importNames(appPackage)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	parsed := make(map[string]*ast.File, len(files))
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		parsed[name] = f
	}

	// Point each dropped descriptor at the stub.
	for _, want := range dropped {
		found := false
		for name, f := range parsed {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Recv != nil || fd.Name.Name != want {
					continue
				}
				if !replaceInitFunc(fd) {
					return fmt.Errorf("%s: %s sets no initFunc", name, want)
				}
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s has no function %s (another Kubernetes version? update the list in trimkcm)", appPackage, want)
		}
	}

	// Delete the package-level functions nothing kept refers to, until none
	// is left to delete: the dropped controllers' start functions first,
	// then what only they called.
	for {
		used := map[string]bool{stubName: true}
		for _, r := range roots {
			used[r] = true
		}
		for _, f := range parsed {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name != "init" {
					// Its own name is not a use of it.
					ast.Inspect(fd.Type, collect(used))
					ast.Inspect(fd.Body, collect(used))
					continue
				}
				ast.Inspect(d, collect(used))
			}
		}
		removed := false
		for _, f := range parsed {
			kept := f.Decls[:0]
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name != "init" && !used[fd.Name.Name] {
					dropComments(f, fd)
					removed = true
					continue
				}
				kept = append(kept, d)
			}
			f.Decls = kept
		}
		if !removed {
			break
		}
	}

	modPath, modDir, err := toolsModule()
	if err != nil {
		return err
	}
	pkgDir := filepath.Join(modDir, "kube-controller-manager")
	if err := os.MkdirAll(filepath.Join(out, "app"), 0o755); err != nil {
		return err
	}
	overlay := map[string]string{}
	write := func(name string, src []byte) error {
		dst := filepath.Join(out, name)
		if err := os.WriteFile(dst, src, 0o644); err != nil {
			return err
		}
		overlay[filepath.Join(pkgDir, name)] = dst
		return nil
	}
	for name, f := range parsed {
		removeUnusedImports(f, names)
		var buf bytes.Buffer
		if err := format.Node(&buf, fset, f); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := write(filepath.Join("app", name), buf.Bytes()); err != nil {
			return err
		}
	}
	if err := write(filepath.Join("app", "zz_trimkcm.go"), []byte(stubFile)); err != nil {
		return err
	}
	// The command's main, importing the package at its new path.
	mainDir, mainFiles, err := packageFiles(command)
	if err != nil {
		return err
	}
	for _, name := range mainFiles {
		src, err := os.ReadFile(filepath.Join(mainDir, name))
		if err != nil {
			return err
		}
		quoted := strconv.Quote(appPackage)
		if !bytes.Contains(src, []byte(quoted)) && len(mainFiles) == 1 {
			return fmt.Errorf("%s: no import of %s", name, appPackage)
		}
		src = bytes.ReplaceAll(src, []byte(quoted), []byte(strconv.Quote(modPath+"/kube-controller-manager/app")))
		if err := write(name, src); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(map[string]any{"Replace": overlay}, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "overlay.json"), append(b, '\n'), 0o644)
}

// toolsModule returns the path and directory of the module trimkcm runs in.
func toolsModule() (path, dir string, err error) {
	out, err := goList("-m", "-f", "{{.Path}}\n{{.Dir}}")
	if err != nil {
		return "", "", err
	}
	path, dir, _ = strings.Cut(strings.TrimSpace(out), "\n")
	return path, dir, nil
}

// replaceInitFunc sets the initFunc field of the descriptor fd returns to
// the stub, and reports whether it found one.
func replaceInitFunc(fd *ast.FuncDecl) bool {
	found := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "initFunc" {
			kv.Value = ast.NewIdent(stubName)
			found = true
		}
		return true
	})
	return found
}

// collect adds every identifier it meets to used. Names are compared
// without scopes, so a local variable named like a function keeps that
// function: the only error this makes is keeping too much.
func collect(used map[string]bool) func(ast.Node) bool {
	return func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			used[id.Name] = true
		}
		return true
	}
}

// dropComments removes the comments inside a deleted declaration and its
// doc comment, which the printer would otherwise leave behind.
func dropComments(f *ast.File, fd *ast.FuncDecl) {
	start, end := fd.Pos(), fd.End()
	if fd.Doc != nil {
		start = fd.Doc.Pos()
	}
	f.Comments = slices.DeleteFunc(f.Comments, func(c *ast.CommentGroup) bool {
		return c.Pos() >= start && c.End() <= end
	})
}

// removeUnusedImports deletes the imports of f that no selector names any
// more; blank and dot imports stay.
func removeUnusedImports(f *ast.File, names map[string]string) {
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	unused := map[*ast.ImportSpec]bool{}
	for _, spec := range f.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		name := names[path]
		if spec.Name != nil {
			name = spec.Name.Name
		}
		if name != "_" && name != "." && name != "" && !used[name] {
			unused[spec] = true
		}
	}
	if len(unused) == 0 {
		return
	}
	f.Imports = slices.DeleteFunc(f.Imports, func(s *ast.ImportSpec) bool { return unused[s] })
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		gd.Specs = slices.DeleteFunc(gd.Specs, func(s ast.Spec) bool {
			is := s.(*ast.ImportSpec)
			if !unused[is] {
				return false
			}
			// Its comments go with it, or the printer moves them to the next.
			f.Comments = slices.DeleteFunc(f.Comments, func(c *ast.CommentGroup) bool {
				return c == is.Doc || c == is.Comment
			})
			return true
		})
	}
}

// packageFiles returns the directory of pkg and the Go files the go command
// compiles for it here (build constraints applied).
func packageFiles(pkg string) (string, []string, error) {
	out, err := goList("-f", "{{.Dir}}\n{{join .GoFiles \"\\n\"}}", pkg)
	if err != nil {
		return "", nil, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[0], lines[1:], nil
}

// importNames maps the import path of every package pkg depends on to its
// package name, which need not be the path's last element.
func importNames(pkg string) (map[string]string, error) {
	out, err := goList("-deps", "-f", "{{.ImportPath}} {{.Name}}", pkg)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		path, name, _ := strings.Cut(line, " ")
		names[path] = name
	}
	return names, nil
}

func goList(args ...string) (string, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out), nil
}
