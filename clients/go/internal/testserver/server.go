// Package testserver starts the real leasehold API server (the Node server of this repository,
// `leasehold serve`, in its own process) on a free 127.0.0.1 port for the Go tests, and a fault
// proxy in front of it. It needs `node` on PATH (or LEASEHOLD_NODE) and finds the repository by
// walking up to bin/leasehold.js (or LEASEHOLD_REPO).
package testserver

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Tokens of a server started with Tokens: AdminToken may do anything (read, write and cas on
// every name), AdaptersToken read and write under adapters/ (not cas: the raw compare-and-swap
// k8slock uses is refused), ReaderToken only read; MemberTokens[i] is the token of member
// ScopedMembers[i] of ScopedGroup alone (write on ScopedGroup/_members/<member>).
const (
	AdminToken    = "admin-token-0123456789abcdef"
	AdaptersToken = "adapters-token-0123456789abcdef"
	ReaderToken   = "reader-token-0123456789abcdef"
	ScopedGroup   = "scoped/shards"
)

var (
	ScopedMembers = []string{"m0", "m1"}
	MemberTokens  = []string{"member-m0-token-0123456789abcdef", "member-m1-token-0123456789abcdef"}
)

func tokensJSON() string {
	tokens := `[{"name":"admin","token":"` + AdminToken + `","prefixes":[""],"verbs":["read","write","cas"]},` +
		`{"name":"adapters","token":"` + AdaptersToken + `","prefixes":["adapters/"],"verbs":["read","write"]},` +
		`{"name":"reader","token":"` + ReaderToken + `","prefixes":[""],"verbs":["read"]}`
	for i, m := range ScopedMembers {
		tokens += `,{"name":"member-` + m + `","token":"` + MemberTokens[i] + `","prefixes":["` + ScopedGroup + `/_members/` + m + `"],"verbs":["write"]}`
	}
	return tokens + "]"
}

// Options of Start.
type Options struct {
	// Tokens turns auth on with AdminToken, AdaptersToken (prefix adapters/) and ReaderToken.
	Tokens bool
	// MaxSkew is the server's wall-clock skew bound (default 100 ms: one server, it only delays takeovers).
	MaxSkew time.Duration
	// Env is more of the server's variables ("LEASEHOLD_WATCH_STREAMS_PER_TOKEN=1").
	Env []string
}

// Server is a running API server process.
type Server struct {
	URL  string
	cmd  *exec.Cmd
	mu   sync.Mutex
	done chan struct{}
	log  *strings.Builder
}

// Start starts a server for t; it is stopped (SIGCONT, then SIGKILL) when t ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := Launch(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Main runs a package's tests with one server started with o, shared through *shared, and stops
// it afterwards (for TestMain).
func Main(m *testing.M, o Options, shared **Server) {
	s, err := Launch(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*shared = s
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// Launch starts a server; the caller stops it.
func Launch(o Options) (*Server, error) {
	repo, err := Repo()
	if err != nil {
		return nil, err
	}
	node := os.Getenv("LEASEHOLD_NODE")
	if node == "" {
		node = "node"
	}
	skew := o.MaxSkew
	if skew == 0 {
		skew = 100 * time.Millisecond
	}
	cmd := exec.Command(node, filepath.Join(repo, "bin", "leasehold.js"), "serve", "--port", "0", "--store", "memory:", "--json")
	cmd.Dir = repo
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEASEHOLD_") {
			env = append(env, kv)
		}
	}
	env = append(env, fmt.Sprintf("LEASEHOLD_MAX_SKEW_MS=%d", skew.Milliseconds()), "LEASEHOLD_WATCH_POLL_MS=100")
	if o.Tokens {
		env = append(env, "LEASEHOLD_TOKENS="+tokensJSON())
	}
	env = append(env, o.Env...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &Server{cmd: cmd, done: make(chan struct{}), log: &strings.Builder{}}
	cmd.Stderr = &lockedWriter{s: s}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the API server (%s): %w", node, err)
	}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	first := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		if scanner.Scan() {
			first <- scanner.Text()
		}
		close(first)
		for scanner.Scan() {
		}
	}()
	select {
	case line, ok := <-first:
		var started struct{ URL string }
		if !ok || json.Unmarshal([]byte(line), &started) != nil || started.URL == "" {
			s.Stop()
			return nil, fmt.Errorf("the API server did not start: %q %s", line, s.Log())
		}
		s.URL = started.URL
		return s, nil
	case <-time.After(60 * time.Second):
		s.Stop()
		return nil, fmt.Errorf("the API server did not listen within 60 s: %s", s.Log())
	}
}

type lockedWriter struct{ s *Server }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.log.Len() < 16*1024 {
		w.s.log.Write(p)
	}
	return len(p), nil
}

// Log is what the server wrote on stderr (the first 16 KiB).
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Pause stops the server process (SIGSTOP): it keeps its sockets but answers nothing.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Stop ends the server process.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Repo is the repository's root: LEASEHOLD_REPO, or the first folder up from here with bin/leasehold.js.
func Repo() (string, error) {
	if repo := os.Getenv("LEASEHOLD_REPO"); repo != "" {
		return repo, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "bin", "leasehold.js")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("bin/leasehold.js not found above the working directory: set LEASEHOLD_REPO to the repository's root")
		}
		dir = parent
	}
}
