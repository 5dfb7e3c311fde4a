// Package doc wraps the contracts of the kernel table into the comment
// lines every generator writes.
package doc

import "strings"

// Lines cuts text into lines that, as "// " comments, fit in 76 columns.
func Lines(text string) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > 73 {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// Comment returns text as Go comment lines, each ending in a newline.
func Comment(text string) string {
	var b strings.Builder
	for _, l := range Lines(text) {
		b.WriteString("// " + l + "\n")
	}
	return b.String()
}
