// Command goproxy writes a file-based Go module proxy (the layout GOPROXY=file://
// reads) holding every Go module a repository's tags release, each module's zip
// made from the tagged commit as the public proxy makes it (golang.org/x/mod/zip).
// A tag DIR/vX.Y.Z releases the module in DIR at vX.Y.Z, as on the Go proxy.
//
//	goproxy -repo REPO -out DIR
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

func main() {
	repo := flag.String("repo", "", "the git repository whose tags release the modules")
	out := flag.String("out", "", "the proxy's directory")
	flag.Parse()
	if *repo == "" || *out == "" {
		log.Fatal("usage: goproxy -repo REPO -out DIR")
	}
	root, err := filepath.Abs(*repo)
	if err != nil {
		log.Fatal(err)
	}
	tags, err := git(root, "tag", "--list")
	if err != nil {
		log.Fatal(err)
	}
	released := 0
	for _, tag := range strings.Fields(string(tags)) {
		dir, version := path.Split(tag)
		if !semver.IsValid(version) || dir == "" {
			continue
		}
		if err := publish(root, *out, strings.TrimSuffix(dir, "/"), version, tag); err != nil {
			log.Fatalf("%s: %v", tag, err)
		}
		released++
	}
	if released == 0 {
		log.Fatalf("%s has no tag DIR/vX.Y.Z", root)
	}
}

// publish writes the .mod, .info and .zip of the module in dir at the tag, and
// adds the version to the module's list.
func publish(repo, out, dir, version, tag string) error {
	gomod, err := git(repo, "show", tag+":"+dir+"/go.mod")
	if err != nil {
		return err
	}
	modulePath := modfile.ModulePath(gomod)
	if modulePath == "" {
		return fmt.Errorf("%s/go.mod names no module", dir)
	}
	escaped, err := module.EscapePath(modulePath)
	if err != nil {
		return err
	}
	versions := filepath.Join(out, escaped, "@v")
	if err := os.MkdirAll(versions, 0o755); err != nil {
		return err
	}
	date, err := git(repo, "log", "-1", "--format=%cI", tag)
	if err != nil {
		return err
	}
	info, err := json.Marshal(map[string]string{"Version": version, "Time": strings.TrimSpace(string(date))})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(versions, version+".info"), info, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(versions, version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	zip, err := os.Create(filepath.Join(versions, version+".zip"))
	if err != nil {
		return err
	}
	err = modzip.CreateFromVCS(zip, module.Version{Path: modulePath, Version: version}, repo, tag, dir)
	if closeErr := zip.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return err
	}
	list, err := os.OpenFile(filepath.Join(versions, "list"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(list, version)
	if closeErr := list.Close(); err == nil {
		err = closeErr
	}
	return err
}

// git runs a git command in repo and returns what it printed.
func git(repo string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	output, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return output, nil
}
