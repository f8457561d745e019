package mono

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
)

// WorkLog is what a test process reports: work lines in its log file ("<ns> <bucket> <term>
// <member> <pid>", the format of test/support/process-cluster.ts), and on stdout one JSON line
// whenever the set of buckets it works on changes ({"held":[...],"at":"<ns>"}), plus events.
type WorkLog struct {
	mu     sync.Mutex
	file   *os.File
	member string
	held   map[int]int64
	last   string
}

// Open appends to path; it prints the first (empty) held line, which says the process is ready.
func Open(path, member string) (*WorkLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	w := &WorkLog{file: f, member: member, held: map[int]int64{}, last: "-"}
	w.mu.Lock()
	w.printLocked()
	w.mu.Unlock()
	return w, nil
}

// Work appends one line for bucket at term, stamped `at` (taken before the caller checked it
// still holds the bucket).
func (w *WorkLog) Work(at int64, bucket int, term int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(w.file, "%d %d %d %s %d\n", at, bucket, term, w.member, os.Getpid())
}

// Hold and Drop change what the process reports it works on.
func (w *WorkLog) Hold(bucket int, term int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held[bucket] = term
	w.printLocked()
}

func (w *WorkLog) Drop(bucket int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.held, bucket)
	w.printLocked()
}

// Event prints one JSON line of other news ({"event": ..., "at": "<ns>", ...fields}).
func (w *WorkLog) Event(event string, fields map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	line := map[string]any{"event": event, "at": fmt.Sprint(Nanos())}
	for k, v := range fields {
		line[k] = v
	}
	out, _ := json.Marshal(line)
	fmt.Println(string(out))
}

func (w *WorkLog) printLocked() {
	held := make([]int, 0, len(w.held))
	for b := range w.held {
		held = append(held, b)
	}
	sort.Ints(held)
	key := fmt.Sprint(held)
	if key == w.last {
		return
	}
	w.last = key
	out, _ := json.Marshal(map[string]any{"held": held, "at": fmt.Sprint(Nanos())})
	fmt.Println(string(out))
}
