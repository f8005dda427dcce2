package plan

import "fmt"

// AutoMerge reports whether cairn merges the step's pull request itself
// (once its "before" gates pass in the live state), and why or why not.
// A policy asks for it with a decision whose AutoMerge is set; even then
// an irreversible step is never merged by cairn, nor one a policy holds
// or denies. The reason is empty when no policy asks for auto-merge.
func (s Step) AutoMerge() (bool, string) {
	var by *Decision
	for i, d := range s.Decisions {
		if d.AutoMerge {
			by = &s.Decisions[i]
			break
		}
	}
	if by == nil {
		return false, ""
	}
	if !s.Reversible || s.Kind.Irreversible() {
		return false, "the step is irreversible; a person merges it"
	}
	for _, d := range s.Decisions {
		if d.Verdict == Deny {
			return false, fmt.Sprintf("denied by %s", d.Policy)
		}
	}
	for _, d := range s.Decisions {
		if d.Verdict == Hold {
			return false, fmt.Sprintf("not while held by %s", d.Policy)
		}
	}
	return true, fmt.Sprintf("policy %s lets cairn merge it once its gates before it pass", by.Policy)
}
