package framework

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Log collects the lines a manager logs. Lines logged after a test ended are harmless.
type Log struct {
	mu    sync.Mutex
	lines []string
}

func (l *Log) write(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%s %s %s", time.Now().Format("15:04:05.000"), prefix, args))
}

func (l *Log) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// since returns the lines from the index from on.
func (l *Log) since(from int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines[from:], "\n")
}

// String returns the whole log.
func (l *Log) String() string { return l.since(0) }
