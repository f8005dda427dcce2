package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"sigs.k8s.io/yaml"
)

// Output formats. Every command whose output is data takes -o: text (the
// default; table is the same), json or yaml.
const (
	formatText = "text"
	formatJSON = "json"
	formatYAML = "yaml"
)

// outputFlag is a command's -o.
type outputFlag struct {
	format  string
	allowed []string
}

// addOutput adds -o to cmd with the formats allowed (the first is the
// default). "table" is accepted wherever "text" is.
func addOutput(cmd *cobra.Command, allowed ...string) *outputFlag {
	o := &outputFlag{allowed: allowed}
	cmd.Flags().StringVarP(&o.format, "output", "o", allowed[0], "output format: "+strings.Join(allowed, ", "))
	return o
}

// get returns the format, "table" read as "text", or a usage error
// naming the command.
func (o *outputFlag) get(command string) (string, error) {
	f := o.format
	if f == "table" {
		f = formatText
	}
	for _, a := range o.allowed {
		if a == f || a == "table" && f == formatText {
			return f, nil
		}
	}
	return "", &exitError{exitUsage, fmt.Errorf("%s: -o must be %s, got %q", command, orList(o.allowed), o.format)}
}

// orList is "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// writeData writes v as indented JSON or as YAML.
func writeData(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	data = append(data, '\n')
	if format == formatYAML {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return fmt.Errorf("encode output: %w", err)
		}
	}
	_, err = w.Write(data)
	return err
}

// terminal says whether w is a terminal: colours and aligned columns are
// for people at one; piped output is plain and tab-separated. Tests
// replace it.
var terminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// style is how text output looks on w: aligned, and coloured unless
// $NO_COLOR is set (no-color.org), on a terminal.
type style struct{ align, color bool }

func styleOf(w io.Writer) style {
	if !terminal(w) {
		return style{}
	}
	_, noColor := os.LookupEnv("NO_COLOR")
	return style{align: true, color: !noColor}
}

// The colours status output uses.
const (
	colorNone   = ""
	colorGreen  = "32"
	colorYellow = "33"
	colorRed    = "31"
	colorBold   = "1"
	colorDim    = "2"
)

// paint colours s when the style has colour.
func (st style) paint(color, s string) string {
	if !st.color || color == colorNone || s == "" {
		return s
	}
	return "\x1b[" + color + "m" + s + "\x1b[0m"
}

// cell is one table cell and its colour.
type cell struct {
	text, color string
}

// table is rows of cells written aligned (a terminal) or tab-separated.
type table struct {
	header []string
	rows   [][]cell
	indent string
}

func (t *table) add(cells ...cell) { t.rows = append(t.rows, cells) }

// write writes the table: on a terminal padded to the widest cell of each
// column (the width of the text, not of its colour codes) with a bold
// header; otherwise one line per row, cells joined by tabs.
func (t *table) write(w io.Writer, st style) error {
	head := make([]cell, len(t.header))
	for i, h := range t.header {
		head[i] = cell{h, colorBold}
	}
	rows := append([][]cell{head}, t.rows...)
	if len(t.header) == 0 {
		rows = t.rows
	}
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(t.indent)
		for i, c := range r {
			last := i == len(r)-1
			switch {
			case !st.align && last:
				b.WriteString(c.text)
			case !st.align:
				b.WriteString(c.text + "\t")
			case last:
				b.WriteString(st.paint(c.color, c.text))
			default:
				b.WriteString(st.paint(c.color, c.text) + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)+2))
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plain is a cell without colour.
func plain(s string) cell { return cell{text: s} }

// dash is s, or "-" when s is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
