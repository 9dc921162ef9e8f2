// An independent verifier of refusalkit journals, built on golang.org/x/mod/sumdb/note and
// golang.org/x/mod/sumdb/tlog: it opens a checkpoint with note.Open, checks refusalkit's
// inclusion and consistency proofs with tlog.CheckRecord and tlog.CheckTree, and reads the
// C2SP tlog-tiles tree with tlog.TileHashReader (tests/journal/test_go_verifier.py runs it).
package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type inclusion struct {
	Index  int64    `json:"index"`
	Size   int64    `json:"tree_size"`
	Leaf   string   `json:"leaf_hash"`
	Hashes []string `json:"hashes"`
}

type consistency struct {
	Old     int64    `json:"old"`
	New     int64    `json:"new"`
	Hashes  []string `json:"hashes"`
	OldRoot string   `json:"old_root"`
}

type input struct {
	Vkey          string        `json:"vkey"`
	Checkpoint    string        `json:"checkpoint"`
	Tiles         string        `json:"tiles"`
	Inclusions    []inclusion   `json:"inclusions"`
	Consistencies []consistency `json:"consistencies"`
}

// tileDir reads C2SP tlog-tiles files: the sumdb path tile/8/L/N less its height element.
type tileDir struct{ root string }

func (d tileDir) Height() int { return 8 }

func (d tileDir) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		path := strings.Replace(t.Path(), "tile/8/", "tile/", 1)
		data, err := os.ReadFile(filepath.Join(d.root, path))
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

func (d tileDir) SaveTiles([]tlog.Tile, [][]byte) {}

func hashOf(text string) tlog.Hash {
	var h tlog.Hash
	raw, err := hex.DecodeString(text)
	if err != nil || len(raw) != len(h) {
		raw, err = base64.StdEncoding.DecodeString(text)
	}
	if err != nil || len(raw) != len(h) {
		fail("bad hash %q", text)
	}
	copy(h[:], raw)
	return h
}

func hashes(texts []string) []tlog.Hash {
	out := make([]tlog.Hash, len(texts))
	for i, t := range texts {
		out[i] = hashOf(t)
	}
	return out
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		fail("%v", err)
	}
	verifier, err := note.NewVerifier(in.Vkey)
	if err != nil {
		fail("verifier key: %v", err)
	}
	opened, err := note.Open([]byte(in.Checkpoint), note.VerifierList(verifier))
	if err != nil {
		fail("note.Open: %v", err)
	}
	lines := strings.Split(opened.Text, "\n")
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		fail("size: %v", err)
	}
	root := hashOf(lines[2])
	for _, p := range in.Inclusions {
		if err := tlog.CheckRecord(hashes(p.Hashes), p.Size, root, p.Index, hashOf(p.Leaf)); err != nil {
			fail("CheckRecord %d: %v", p.Index, err)
		}
	}
	for _, p := range in.Consistencies {
		if err := tlog.CheckTree(hashes(p.Hashes), p.New, root, p.Old, hashOf(p.OldRoot)); err != nil {
			fail("CheckTree %d->%d: %v", p.Old, p.New, err)
		}
	}
	checked := 0
	if in.Tiles != "" {
		reader := tlog.TileHashReader(tlog.Tree{N: size, Hash: root}, tileDir{in.Tiles})
		got, err := tlog.TreeHash(size, reader)
		if err != nil || got != root {
			fail("TreeHash from tiles: %v (%v)", err, got)
		}
		for _, index := range []int64{0, size / 2, size - 1} {
			proof, err := tlog.ProveRecord(size, index, reader)
			if err != nil {
				fail("ProveRecord %d from tiles: %v", index, err)
			}
			leaf, err := reader.ReadHashes([]int64{tlog.StoredHashIndex(0, index)})
			if err != nil {
				fail("leaf %d from tiles: %v", index, err)
			}
			if err := tlog.CheckRecord(proof, size, root, index, leaf[0]); err != nil {
				fail("CheckRecord %d from tiles: %v", index, err)
			}
			checked++
		}
	}
	fmt.Printf("ok %s size %d: %d inclusion, %d consistency, %d from tiles\n",
		lines[0], size, len(in.Inclusions), len(in.Consistencies), checked)
}
