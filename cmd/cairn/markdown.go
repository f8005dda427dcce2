package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxCodeBlock bounds the text of one code block in a report: a GitHub
// comment holds 65,536 characters.
const maxCodeBlock = 60_000

// codeBlock puts text from anywhere (errors naming files of a branch,
// rule messages, plans) in a fenced Markdown code block that it cannot
// leave: the fence is longer than any run of backticks in the text, so
// no line of it can close the block, and nothing in it is read as
// Markdown or HTML. Text past maxCodeBlock is cut at a line, saying so.
func codeBlock(text string) string {
	text = strings.TrimSuffix(text, "\n")
	if len(text) > maxCodeBlock {
		cut := strings.LastIndexByte(text[:maxCodeBlock], '\n')
		if cut < 0 {
			cut = maxCodeBlock
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
		}
		text = text[:cut] + fmt.Sprintf("\n... %d more bytes not shown; run cairn check locally to see them all", len(text)-cut)
	}
	fence := strings.Repeat("`", max(3, longestBacktickRun(text)+1))
	return fence + "\n" + text + "\n" + fence + "\n"
}

func longestBacktickRun(s string) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
