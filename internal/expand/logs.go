package expand

import (
	"context"
	"fmt"
	"sync"
)

// maxLogLines bounds the lines templates print in one expansion; the
// bytes are bounded by Options.MaxOutputBytes.
const maxLogLines = 1000

// templateLogs collects what templates print (Starlark's print) during
// one expansion, for Result.Logs.
type templateLogs struct {
	mu      sync.Mutex
	lines   []string
	bytes   int
	dropped bool
}

type logsKey struct{}

// withTemplateLogs returns a context whose template prints are collected.
func withTemplateLogs(ctx context.Context) (context.Context, *templateLogs) {
	l := &templateLogs{}
	return context.WithValue(ctx, logsKey{}, l), l
}

func (l *templateLogs) add(line string, limit int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped {
		return
	}
	if len(l.lines) >= maxLogLines || l.bytes+len(line) > limit {
		l.dropped = true
		l.lines = append(l.lines, "(further template output dropped)")
		return
	}
	l.bytes += len(line)
	l.lines = append(l.lines, line)
}

// list returns the lines collected, nil if none.
func (l *templateLogs) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines
}

// templatePrint is Starlark's print: a log record at Debug level (dm -v
// shows it on stderr; registryd's Info log does not, since a template may
// print its properties) naming the template and line, and a line of the
// expansion's Result.Logs, which goes back to whoever asked.
func (x *Expander) templatePrint(ctx context.Context, label, file string, line int, msg string) {
	x.opts.Logger.DebugContext(ctx, "template print", "template", label, "file", file, "line", line, "msg", msg)
	if l, ok := ctx.Value(logsKey{}).(*templateLogs); ok {
		text := fmt.Sprintf("%s:%d: %s", file, line, msg)
		if label != file {
			text = "(" + label + ") " + text
		}
		l.add(text, x.opts.MaxOutputBytes)
	}
}
