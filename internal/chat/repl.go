package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/parse-mcp/parse-mcp/internal/terminal"
)

// CostLine is the one-line cost of usage u on the session's model.
func CostLine(prices Prices, p Provider, u Usage) string {
	return fmt.Sprintf("%d in / %d out tokens, %s (%s)", u.In, u.Out, usd(prices, p, u), p.Model())
}

func usd(prices Prices, p Provider, u Usage) string {
	pr, ok := prices.Lookup(p.Name(), p.Model())
	if !ok {
		return "USD unknown (no price for this model: set LLM_PRICES)"
	}
	return fmt.Sprintf("$%.4f", pr.Cost(u))
}

// CutOffNote follows an answer the model ended at its output-token limit.
const CutOffNote = "(the answer was cut off at the model's output limit)"

// REPL is `parse-mcp chat`: a prompt with line editing and history, slash
// commands, streamed answers; Ctrl-C cancels the answer being written (and
// its database work), Ctrl-D exits.
type REPL struct {
	Session *Session
	Prices  Prices
	In      io.Reader // a terminal gets the line editor; anything else is read by lines
	Out     io.Writer
	// Banner is printed once before the first prompt.
	Banner string
	// Echo is where the line editor echoes what the person types (default
	// Out): their own keystrokes, unscrubbed, so a word that begins like a
	// secret is not held back by the scrubber while it is typed.
	Echo io.Writer
}

const helpText = `/reset     forget the conversation (the cost so far stays)
/compact   replace the conversation with a summary (shows the token delta)
/tools     the tools the model may call
/trace     the tool calls of the last question (/trace all: of the session)
/cost      tokens and USD of the last question and of the session
/history   the conversation so far
/exit      leave (also Ctrl-D)
Ctrl-C cancels the answer being written.`

// lineReader reads one line of input; it gives up when ctx ends (SIGTERM,
// or Ctrl-C with input from a pipe) even while the read itself blocks.
type lineReader interface {
	ReadLine(ctx context.Context) (string, error)
}

// Run serves the prompt until /exit, Ctrl-D, end of input or ctx ends.
func (r *REPL) Run(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// Everything shown below the prompt passes the terminal filter: answers and
	// history can carry what the model copied from untrusted rows.
	out := r.Out
	r.Out = terminal.Filter(out)
	defer func() { r.Out = out }()
	lines, tty := r.lineReader(out)

	// Ctrl-C arrives as SIGINT while an answer is written (the terminal is
	// in its normal mode then; the prompt reads it in raw mode as a key).
	// It cancels the answer; with no answer running (input from a pipe) it
	// ends the chat.
	turns := &turnCanceller{}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	go turns.watch(ctx, sig, stop)

	if r.Banner != "" {
		fmt.Fprintln(r.Out, r.Banner)
	}
	r.Session.Out = r.Out
	r.Session.OnTool = r.showToolCall
	for {
		if ctx.Err() != nil {
			return nil
		}
		line, err := lines.ReadLine(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tty {
					fmt.Fprintln(r.Out)
				}
				return nil
			}
			return err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if r.turn(ctx, turns, line) {
			return nil
		}
	}
}

// lineReader is the line editor on a terminal, else a reader by lines; it
// reports whether In is a terminal.
func (r *REPL) lineReader(out io.Writer) (lineReader, bool) {
	f, tty := r.In.(*os.File)
	if tty && term.IsTerminal(int(f.Fd())) {
		echo := r.Echo
		if echo == nil {
			echo = out
		}
		return newTTYReader(f, echo), true
	}
	sc := bufio.NewScanner(r.In)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &scanReader{sc: sc}, false
}

// showToolCall prints one line per tool call while an answer is written.
func (r *REPL) showToolCall(e TraceEntry) {
	status := ""
	if e.IsError {
		status = " (error)"
	}
	fmt.Fprintf(r.Out, "  · %s %s%s\n", e.Name, formatDuration(e.Duration), status)
}

// turn runs one line, a command or a question; it reports whether the chat
// should end. A question or a command that calls the model (/compact) runs
// under its own context: Ctrl-C cancels it, not the chat.
func (r *REPL) turn(ctx context.Context, turns *turnCanceller, line string) bool {
	tctx := turns.begin(ctx)
	if strings.HasPrefix(line, "/") {
		done := r.command(tctx, line)
		turns.end()
		return done
	}
	ans, err := r.Session.Ask(tctx, line)
	turns.end()
	switch {
	case err == nil:
		if ans.CutOff {
			fmt.Fprintln(r.Out, CutOffNote)
		}
	case errors.Is(err, context.Canceled) && ctx.Err() == nil:
		// The terminal has echoed the ^C already (the answer streams in
		// cooked mode): the note does not print a second one.
		fmt.Fprintln(r.Out, "\nanswer cancelled (the question is dropped from the history)")
	case errors.Is(err, ErrRoundLimit):
		fmt.Fprintf(r.Out, "\nstopped: %v\n", err)
	case ctx.Err() != nil:
		return true
	default:
		fmt.Fprintf(r.Out, "\nerror: %v\n", err)
	}
	return false
}

// turnCanceller holds the cancel function of the turn running, if any, for
// the Ctrl-C watcher.
type turnCanceller struct {
	mu     sync.Mutex
	cancel context.CancelFunc
}

// begin starts a turn under its own context.
func (t *turnCanceller) begin(ctx context.Context) context.Context {
	tctx, cancel := context.WithCancel(ctx)
	t.mu.Lock()
	t.cancel = cancel
	t.mu.Unlock()
	return tctx
}

// end ends the turn running.
func (t *turnCanceller) end() {
	t.mu.Lock()
	cancel := t.cancel
	t.cancel = nil
	t.mu.Unlock()
	cancel()
}

// watch turns each SIGINT into the turn's cancel, or stop with no turn
// running, until ctx ends.
func (t *turnCanceller) watch(ctx context.Context, sig <-chan os.Signal, stop context.CancelFunc) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			t.mu.Lock()
			c := t.cancel
			t.mu.Unlock()
			if c != nil {
				c()
			} else {
				stop()
			}
		}
	}
}

// replCommands are the slash commands by name; each reports whether the
// chat should end.
var replCommands = map[string]func(r *REPL, ctx context.Context, arg string) bool{
	"/exit":    func(*REPL, context.Context, string) bool { return true },
	"/quit":    func(*REPL, context.Context, string) bool { return true },
	"/help":    (*REPL).help,
	"/?":       (*REPL).help,
	"/reset":   (*REPL).reset,
	"/compact": (*REPL).compact,
	"/tools":   (*REPL).tools,
	"/trace":   (*REPL).trace,
	"/cost":    (*REPL).cost,
	"/history": (*REPL).history,
}

// command runs a slash command; it reports whether the chat should end.
func (r *REPL) command(ctx context.Context, line string) bool {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	run, ok := replCommands[strings.ToLower(name)]
	if !ok {
		fmt.Fprintf(r.Out, "unknown command %s (/help lists them)\n", name)
		return false
	}
	return run(r, ctx, arg)
}

func (r *REPL) help(context.Context, string) bool {
	fmt.Fprintln(r.Out, helpText)
	return false
}

func (r *REPL) reset(context.Context, string) bool {
	r.Session.Reset()
	fmt.Fprintln(r.Out, "history cleared (the cost so far stays: /cost)")
	return false
}

func (r *REPL) compact(ctx context.Context, _ string) bool {
	s := r.Session
	if len(s.History()) == 0 {
		fmt.Fprintln(r.Out, "nothing to compact")
		return false
	}
	before, after, err := s.Compact(ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(r.Out, "\ncompact cancelled (history kept)")
			return false
		}
		fmt.Fprintf(r.Out, "compact failed: %v\n", err)
		return false
	}
	fmt.Fprintf(r.Out, "history compacted: %d → %d tokens (%+d)\n", before, after, after-before)
	return false
}

func (r *REPL) tools(context.Context, string) bool {
	s := r.Session
	for _, t := range s.Tools() {
		fmt.Fprintf(r.Out, "%-20s %s\n", t.Name, firstSentence(t.Description))
	}
	fmt.Fprintf(r.Out, "%d tools\n", len(s.Tools()))
	return false
}

func (r *REPL) trace(_ context.Context, arg string) bool {
	s := r.Session
	entries := s.Trace()
	if arg != "all" {
		var last []TraceEntry
		for _, e := range entries {
			if e.Turn == s.Turn() {
				last = append(last, e)
			}
		}
		entries = last
	}
	if len(entries) == 0 {
		fmt.Fprintln(r.Out, "no tool calls")
	}
	for _, e := range entries {
		fmt.Fprintf(r.Out, "#%d.%d %s\n", e.Turn, e.Round, e)
	}
	return false
}

func (r *REPL) cost(context.Context, string) bool {
	s := r.Session
	fmt.Fprintf(r.Out, "last question: %s\n", CostLine(r.Prices, s.Provider, s.Last))
	fmt.Fprintf(r.Out, "session:       %s\n", CostLine(r.Prices, s.Provider, s.Total))
	if pr, ok := r.Prices.Lookup(s.Provider.Name(), s.Provider.Model()); ok {
		fmt.Fprintf(r.Out, "price: $%.2f in / $%.2f out per million tokens (LLM_PRICES overrides)\n", pr.In, pr.Out)
	}
	return false
}

func (r *REPL) history(context.Context, string) bool {
	s := r.Session
	if sum := s.Summary(); sum != "" {
		fmt.Fprintf(r.Out, "summary: %s\n", sum)
	}
	for _, m := range s.History() {
		switch m.Role {
		case RoleUser:
			fmt.Fprintf(r.Out, "you: %s\n", m.Text)
		case RoleAssistant:
			if m.Text != "" {
				fmt.Fprintf(r.Out, "assistant: %s\n", strings.TrimSpace(m.Text))
			}
			for _, c := range m.Calls {
				fmt.Fprintf(r.Out, "  → %s %s\n", c.Name, compactJSON(c.Args))
			}
		case RoleTool:
			for _, res := range m.Results {
				status := ""
				if res.IsError {
					status = " (error)"
				}
				fmt.Fprintf(r.Out, "  ← %s: %d bytes%s\n", res.Name, len(res.Text), status)
			}
		}
	}
	if len(s.History()) == 0 && s.Summary() == "" {
		fmt.Fprintln(r.Out, "no history")
	}
	return false
}

func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	for from := 0; ; {
		i := strings.Index(s[from:], ". ")
		if i < 0 {
			break
		}
		end := from + i + 1
		if w := s[:end]; strings.HasSuffix(w, "e.g.") || strings.HasSuffix(w, "i.e.") {
			from = end
			continue
		}
		s = s[:end]
		break
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 100 {
		s = string(r[:99]) + "…"
	}
	return s
}

type lineResult struct {
	line string
	err  error
}

// scanReader reads lines from a pipe or file in a goroutine, one line ahead
// at most.
type scanReader struct {
	sc      *bufio.Scanner
	pending chan lineResult
}

func (s *scanReader) ReadLine(ctx context.Context) (string, error) {
	if s.pending == nil {
		s.pending = make(chan lineResult, 1)
		go func() {
			if s.sc.Scan() {
				s.pending <- lineResult{line: s.sc.Text()}
				return
			}
			err := s.sc.Err()
			if err == nil {
				err = io.EOF
			}
			s.pending <- lineResult{err: err}
		}()
	}
	select {
	case <-ctx.Done():
		return "", io.EOF
	case r := <-s.pending:
		s.pending = nil
		return r.line, r.err
	}
}

// ttyReader is golang.org/x/term's line editor (arrows, history with
// up/down, Ctrl-A/E/K/U/W…), in raw mode only while a line is read: while an
// answer is written the terminal is in its normal mode, so Ctrl-C is a
// SIGINT that cancels it.
type ttyReader struct {
	f *os.File
	t *term.Terminal
}

func newTTYReader(f *os.File, out io.Writer) *ttyReader {
	rw := struct {
		io.Reader
		io.Writer
	}{&ctrlCLine{r: f}, out}
	return &ttyReader{f: f, t: term.NewTerminal(rw, "> ")}
}

func (t *ttyReader) ReadLine(ctx context.Context) (string, error) {
	fd := int(t.f.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return "", err
	}
	defer func() { _ = term.Restore(fd, old) }()
	// A terminal that reports no size (0×0, e.g. under script(1)) keeps the
	// editor's 80 columns: a width of 0 would wrap after every character.
	if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
		_ = t.t.SetSize(w, h)
	}
	done := make(chan lineResult, 1)
	go func() {
		line, err := t.t.ReadLine()
		done <- lineResult{line, err}
	}()
	select {
	case r := <-done:
		return r.line, r.err
	case <-ctx.Done():
		// The chat is ending (SIGTERM): the terminal gets its mode back;
		// the read left blocked ends with the process.
		return "", io.EOF
	}
}

// ctrlCLine makes Ctrl-C at the prompt clear the line (as in a shell)
// instead of ending input: x/term's editor reads it as end of input, like
// Ctrl-D. It becomes Ctrl-E (end of line) then Ctrl-U (erase to the start).
type ctrlCLine struct {
	r   io.Reader
	buf []byte
}

func (c *ctrlCLine) Read(p []byte) (int, error) {
	if len(c.buf) == 0 {
		raw := make([]byte, max(len(p)/2, 1))
		n, err := c.r.Read(raw)
		for _, b := range raw[:n] {
			if b == 3 {
				c.buf = append(c.buf, 5, 21)
			} else {
				c.buf = append(c.buf, b)
			}
		}
		if n == 0 {
			return 0, err
		}
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}
