package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress reports long work on stderr: on a terminal one line rewritten
// in place, elsewhere (logs, pipes) a line per step and a line every few
// seconds of counted work.
type progress struct {
	w        io.Writer
	terminal bool
	last     time.Time
	dirty    bool // a line is open on the terminal
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

// step announces a stage of the work.
func (p *progress) step(msg string) {
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s…", msg)
		p.dirty = true
		return
	}
	fmt.Fprintf(p.w, "%s…\n", msg)
	p.last = time.Now()
}

// count reports item i of n.
func (p *progress) count(i, n int, what string) {
	msg := fmt.Sprintf("[%d/%d] %s", i, n, what)
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", msg)
		p.dirty = true
		return
	}
	if i == 1 || i == n || time.Since(p.last) >= 3*time.Second {
		fmt.Fprintln(p.w, msg)
		p.last = time.Now()
	}
}

// done clears the line on a terminal.
func (p *progress) done() {
	if p.terminal && p.dirty {
		fmt.Fprint(p.w, "\r\033[K")
		p.dirty = false
	}
}
