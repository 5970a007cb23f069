// Command ferretdb2 runs the tests' second engine — FerretDB 2.7 embedded
// in this process, on PostgreSQL 18 + DocumentDB inside a Debian-testing
// chroot — and takes it down again when no test process uses it any more.
//
// It is a TEST-ONLY program in a module of its own, so FerretDB v2 and its
// dependencies stay out of the parse-mcp module (and binary). The harness
// in the parent directory (package enginetest) builds and starts it; a
// developer can too:
//
//	go build -C internal/enginetest/ferretdb2 -o /tmp/ferretdb2 .
//	/tmp/ferretdb2 -root ~/.cache/parse-mcp/engine2/root -state ~/.cache/parse-mcp/engine2/run
//
// The lock protocol (shared with package enginetest): ctl.lock in the state
// directory serialises starting and stopping; every test process using the
// engine holds a shared flock on users.lock for as long as it runs. Once a
// second, the supervisor takes ctl.lock and tries an exclusive users.lock:
// when that succeeds for -grace in a row nobody uses the engine, and it
// tears everything down (FerretDB, PostgreSQL, the /proc and /dev bind
// mounts) before releasing ctl.lock, so a new user can never meet a
// half-stopped instance. instance.json in the state directory names the
// running supervisor and its MongoDB URI; it exists only while the engine
// serves.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/v2/ferretdb"
)

// Paths inside the chroot.
const (
	pgBin   = "/usr/lib/postgresql/18/bin"
	pgData  = "/var/lib/parse-mcp/pgdata"
	pgSock  = "/run/postgresql"
	pgUser  = "postgres"
	chrootE = "/usr/sbin/chroot"
)

// Instance is the content of instance.json.
type Instance struct {
	PID          int    `json:"pid"`
	URI          string `json:"uri"`
	PostgresPort int    `json:"postgres_port"`
}

func main() {
	root := flag.String("root", "", "the Debian-testing tree with postgresql-18-documentdb")
	state := flag.String("state", "", "directory for ctl.lock, users.lock, instance.json and FerretDB's state")
	grace := flag.Duration("grace", 15*time.Second, "how long the engine stays up with no user")
	flag.Parse()
	log.SetPrefix("ferretdb2: ")
	log.SetFlags(log.LstdFlags | log.Lmsgprefix)
	if *root == "" || *state == "" {
		log.Fatal("-root and -state are required")
	}
	if err := run(*root, *state, *grace); err != nil {
		log.Fatal(err)
	}
}

func run(root, state string, grace time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	e := &engine{root: root, state: state}
	defer e.teardown()
	if err := e.start(ctx); err != nil {
		return err
	}
	log.Printf("serving %s (PostgreSQL on port %d)", e.uri, e.pgPort)

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var idleSince time.Time
	for {
		select {
		case <-ctx.Done():
			log.Print("signalled: stopping")
			return e.stopLocked()
		case err := <-e.pgDone:
			e.pgDone = nil
			return fmt.Errorf("postgres exited: %v", err)
		case <-e.ferretDone:
			e.ferretDone = nil
			return errors.New("FerretDB stopped")
		case <-tick.C:
		}
		unlock, err := lockFile(filepath.Join(state, "ctl.lock"), false)
		if err != nil {
			return err
		}
		if inUse(filepath.Join(state, "users.lock")) {
			idleSince = time.Time{}
			unlock()
			continue
		}
		if idleSince.IsZero() {
			idleSince = time.Now()
		}
		if time.Since(idleSince) < grace {
			unlock()
			continue
		}
		log.Printf("no user for %s: stopping", grace)
		// Still holding ctl.lock: nobody joins until the teardown is done.
		os.Remove(filepath.Join(state, "instance.json"))
		e.teardown()
		unlock()
		return nil
	}
}

type engine struct {
	root, state string
	pgPort      int
	pg          *exec.Cmd
	pgDone      chan error
	ferretStop  context.CancelFunc
	ferretDone  chan struct{}
	uri         string
	mounted     []string
	down        bool
}

// start brings the engine up: the chroot's mounts, a fresh PostgreSQL
// cluster with DocumentDB, FerretDB on it, then instance.json.
func (e *engine) start(ctx context.Context) error {
	if err := os.MkdirAll(e.state, 0o755); err != nil {
		return err
	}
	for _, m := range []string{"proc", "dev"} {
		if err := e.bindMount("/"+m, filepath.Join(e.root, m)); err != nil {
			return err
		}
	}
	if err := e.initPostgres(); err != nil {
		return err
	}
	if err := e.startPostgres(ctx); err != nil {
		return err
	}
	if err := e.startFerretDB(); err != nil {
		return err
	}
	b, err := json.Marshal(Instance{PID: os.Getpid(), URI: e.uri, PostgresPort: e.pgPort})
	if err != nil {
		return err
	}
	tmp := filepath.Join(e.state, "instance.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(e.state, "instance.json"))
}

// initPostgres makes a fresh cluster in the chroot (the data and socket
// directories owned by postgres, initdb) listening on a free port.
func (e *engine) initPostgres() error {
	uid, gid, err := lookupUser(filepath.Join(e.root, "etc/passwd"), pgUser)
	if err != nil {
		return err
	}
	data := filepath.Join(e.root, pgData)
	stopStalePostgres(data)
	if err := os.RemoveAll(data); err != nil {
		return err
	}
	for _, d := range []string{data, filepath.Join(e.root, pgSock)} {
		if err := e.postgresDir(d, uid, gid); err != nil {
			return err
		}
	}
	if out, err := e.chroot(pgBin+"/initdb", "-D", pgData, "--auth=trust", "-U", pgUser,
		"--no-sync", "--encoding=UTF8", "--locale=C.UTF-8").CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if e.pgPort, err = freePort(); err != nil {
		return err
	}
	conf := fmt.Sprintf(`
# parse-mcp test engine (internal/enginetest/ferretdb2)
shared_preload_libraries = 'pg_documentdb_core, pg_documentdb, pg_cron'
cron.database_name = 'postgres'
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
dynamic_shared_memory_type = mmap
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
`, e.pgPort, pgSock)
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// postgresDir makes d (0700, owned by uid:gid) under a 0755 parent.
func (e *engine) postgresDir(d string, uid, gid int) error {
	// The tree's absolute symlinks (var/run -> /run) would lead out of it:
	// refuse any directory whose parent resolves elsewhere.
	if err := insideTree(e.root, filepath.Dir(d)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Dir(d), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return os.Chown(d, uid, gid)
}

// startPostgres starts PostgreSQL and waits until the DocumentDB extension
// is created (at most 2 minutes).
func (e *engine) startPostgres(ctx context.Context) error {
	e.pg = e.chroot(pgBin+"/postgres", "-D", pgData)
	e.pg.Stdout, e.pg.Stderr = os.Stderr, os.Stderr
	e.pg.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := e.pg.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	e.pgDone = make(chan error, 1)
	go func() { e.pgDone <- e.pg.Wait() }()

	var last []byte
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := e.chroot(pgBin+"/psql", "-h", "127.0.0.1", "-p", strconv.Itoa(e.pgPort), "-U", pgUser,
			"-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qc", "CREATE EXTENSION IF NOT EXISTS documentdb CASCADE").CombinedOutput()
		if err == nil {
			return nil
		}
		last = out
		select {
		case err := <-e.pgDone:
			e.pgDone = nil
			return fmt.Errorf("postgres exited during start-up: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CREATE EXTENSION documentdb did not succeed within 2 minutes: %s", last)
		}
	}
}

// startFerretDB runs FerretDB on the cluster, in this process.
func (e *engine) startFerretDB() error {
	no := false
	fdb, err := ferretdb.New(&ferretdb.Config{
		PostgreSQLURL: fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres", pgUser, e.pgPort),
		ListenAddr:    "127.0.0.1:0",
		StateDir:      filepath.Join(e.state, "ferretdb"),
		LogLevel:      slog.LevelWarn,
		LogOutput:     os.Stderr,
		Telemetry:     &no,
	})
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancel(context.Background())
	e.ferretStop = cancel
	e.ferretDone = make(chan struct{})
	go func() { fdb.Run(fctx); close(e.ferretDone) }()
	e.uri = fdb.MongoDBURI()
	return nil
}

// stopLocked tears down under ctl.lock (the signal path).
func (e *engine) stopLocked() error {
	unlock, err := lockFile(filepath.Join(e.state, "ctl.lock"), false)
	if err != nil {
		return err
	}
	defer unlock()
	e.removeInstanceFile()
	e.teardown()
	return nil
}

func (e *engine) removeInstanceFile() {
	path := filepath.Join(e.state, "instance.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var in Instance
	if json.Unmarshal(b, &in) == nil && in.PID == os.Getpid() {
		os.Remove(path)
	}
}

// teardown stops FerretDB and PostgreSQL and removes the mounts; it runs
// once and tolerates a partial start.
func (e *engine) teardown() {
	if e.down {
		return
	}
	e.down = true
	e.removeInstanceFile()
	if e.ferretStop != nil {
		e.ferretStop()
		if e.ferretDone != nil {
			select {
			case <-e.ferretDone:
			case <-time.After(10 * time.Second):
				log.Print("FerretDB did not stop within 10 s")
			}
		}
	}
	if e.pg != nil && e.pgDone != nil {
		_ = e.pg.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-e.pgDone:
		case <-time.After(30 * time.Second):
			log.Print("postgres did not stop within 30 s: killing it")
			_ = e.pg.Process.Kill()
			<-e.pgDone
		}
	}
	for _, m := range slices.Backward(e.mounted) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			log.Printf("unmounting %s: %v", m, err)
		}
	}
	e.mounted = nil
	log.Print("stopped")
}

// bindMount binds src at dst unless something is mounted there already (a
// previous supervisor that was killed); either way teardown unmounts it.
func (e *engine) bindMount(src, dst string) error {
	mounted, err := isMountPoint(dst)
	if err != nil {
		return err
	}
	if !mounted {
		if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mounting %s on %s: %w", src, dst, err)
		}
	}
	e.mounted = append(e.mounted, dst)
	return nil
}

func isMountPoint(path string) (bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMount(fields[4]) == abs {
			return true, nil
		}
	}
	return false, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space …).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// chroot runs name inside the tree as the postgres user.
func (e *engine) chroot(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(chrootE, append([]string{"--userspec=" + pgUser + ":" + pgUser, e.root, name}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/var/lib/postgresql", "LANG=C.UTF-8", "PGTZ=UTC"}
	return cmd
}

// stopStalePostgres stops a postmaster left running in data by a
// supervisor that was killed.
func stopStalePostgres(data string) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 1 {
		return
	}
	if syscall.Kill(pid, syscall.SIGINT) != nil {
		return
	}
	log.Printf("stopping the stale postgres %d", pid)
	for range 150 {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	time.Sleep(500 * time.Millisecond)
}

// insideTree fails unless dir resolves to a path inside root (the tree's
// absolute symlinks, var/run -> /run, would lead to the host's files), then
// creates it.
func insideTree(root, dir string) error {
	rootReal, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	existing := dir
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		existing = filepath.Dir(existing)
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return err
	}
	if real != rootReal && !strings.HasPrefix(real, rootReal+string(filepath.Separator)) {
		return fmt.Errorf("%s resolves to %s, outside the tree %s", existing, real, rootReal)
	}
	return os.MkdirAll(dir, 0o755)
}

func lookupUser(passwd, name string) (uid, gid int, err error) {
	b, err := os.ReadFile(passwd)
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) > 3 && f[0] == name {
			uid, err1 := strconv.Atoi(f[2])
			gid, err2 := strconv.Atoi(f[3])
			if err1 != nil || err2 != nil {
				break
			}
			return uid, gid, nil
		}
	}
	return 0, 0, fmt.Errorf("no user %s in %s", name, passwd)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockFile takes an exclusive flock on path, waiting for it (nonBlocking:
// failing at once instead).
func lockFile(path string, nonBlocking bool) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if nonBlocking {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// inUse reports whether a test process holds its shared lock on users.lock.
func inUse(path string) bool {
	unlock, err := lockFile(path, true)
	if err != nil {
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			log.Printf("checking %s: %v", path, err)
		}
		return true // when in doubt, stay up
	}
	unlock()
	return false
}
