package main

import (
	"fmt"
	"path"
	"slices"
	"strings"

	git "github.com/go-git/go-git/v5"
)

// maxWorktreeNotes bounds the files a warning lists.
const maxWorktreeNotes = 10

// checkoutWarnings says what cairn propose, which publishes what is
// committed on base, would leave out of a local checkout dir that cairn
// plan reads as it is: uncommitted changes under the given folders
// (specs, policies), and a checkout of another branch than base. Nothing
// for a bare repo, a URL or a folder that is not a checkout.
func checkoutWarnings(dir, base string, folders ...string) []string {
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return nil
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil
	}
	var out []string
	if head, err := repo.Head(); err == nil && head.Name().IsBranch() && head.Name().Short() != base {
		out = append(out, fmt.Sprintf("%s has branch %s checked out; propose publishes what is committed on %s", dir, head.Name().Short(), base))
	}
	st, err := wt.Status()
	if err != nil {
		return append(out, fmt.Sprintf("cannot tell whether %s has uncommitted changes: %v", dir, err))
	}
	var files []string
	for name, s := range st {
		if s.Worktree == git.Unmodified && s.Staging == git.Unmodified {
			continue
		}
		for _, f := range folders {
			if f = path.Clean(f); strings.HasPrefix(name, f+"/") {
				files = append(files, fmt.Sprintf("%c%c %s", code(s.Staging), code(s.Worktree), name))
				break
			}
		}
	}
	if len(files) == 0 {
		return out
	}
	slices.Sort(files)
	more := ""
	if len(files) > maxWorktreeNotes {
		more = fmt.Sprintf("\n  ... and %d more", len(files)-maxWorktreeNotes)
		files = files[:maxWorktreeNotes]
	}
	return append(out, fmt.Sprintf("%s has uncommitted changes that cairn plan shows and propose does not publish (it publishes what is committed on %s); commit them first:\n  %s%s",
		dir, base, strings.Join(files, "\n  "), more))
}

// code is a status code as git status --short prints it.
func code(c git.StatusCode) rune {
	if c == git.Unmodified {
		return ' '
	}
	return rune(c)
}
