package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Binaries are the programs an Env runs.
type Binaries struct {
	// APIServer is the kube-apiserver executable.
	APIServer string
	// Etcd is the etcd executable.
	Etcd string
	// Kubectl is the kubectl executable, or "" when none was found; an Env
	// does not need it, benchmarks and people do.
	Kubectl string
	// ControllerManager is the kube-controller-manager executable, or ""
	// when none was found; only Options.ControllerManager needs it.
	ControllerManager string
}

// MissingError reports programs FindBinaries could not find, with how to
// get them.
type MissingError struct {
	// Missing lists each missing program with where it was looked for and
	// how to get it.
	Missing []string
}

func (e *MissingError) Error() string {
	return "kubetest: " + strings.Join(e.Missing, "; ")
}

// FindBinaries finds kube-apiserver, kube-controller-manager and kubectl in
// $DM_KUBE_BIN, else in
// .testenv/bin of the repository holding the working directory (where
// `make testenv` builds them), and etcd in $DM_KUBE_BIN, on $PATH or at
// /usr/bin/etcd. A missing kube-apiserver or etcd is a *MissingError naming
// `make testenv` or `apt-get install etcd-server`.
func FindBinaries() (Binaries, error) {
	dir := os.Getenv("DM_KUBE_BIN")
	how := "set by $DM_KUBE_BIN"
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return Binaries{}, &MissingError{Missing: []string{
				"kube-apiserver: " + err.Error() + " (run `make testenv` in the dm repository, or set $DM_KUBE_BIN)"}}
		}
		dir = filepath.Join(root, ".testenv", "bin")
		how = "run `make testenv`"
	}
	var b Binaries
	var missing []string
	if p := filepath.Join(dir, "kube-apiserver"); isExecutable(p) {
		b.APIServer = p
	} else {
		missing = append(missing, fmt.Sprintf("kube-apiserver not found in %s (%s)", dir, how))
	}
	if p := filepath.Join(dir, "kubectl"); isExecutable(p) {
		b.Kubectl = p
	}
	if p := filepath.Join(dir, "kube-controller-manager"); isExecutable(p) {
		b.ControllerManager = p
	}
	if p := filepath.Join(dir, "etcd"); isExecutable(p) {
		b.Etcd = p
	} else if p, err := exec.LookPath("etcd"); err == nil {
		b.Etcd = p
	} else if isExecutable("/usr/bin/etcd") {
		b.Etcd = "/usr/bin/etcd"
	} else {
		missing = append(missing, fmt.Sprintf("etcd not found in %s, on $PATH or at /usr/bin/etcd (%s)", dir, how))
	}
	if len(missing) > 0 {
		return b, &MissingError{Missing: missing}
	}
	return b, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// repoRoot walks up from the working directory to the directory whose
// go.mod declares module github.com/dmhq/dm.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declaresDM(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module github.com/dmhq/dm above %s", wd)
		}
		dir = parent
	}
}

func declaresDM(gomod []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "module" && f[1] == "github.com/dmhq/dm" {
			return true
		}
	}
	return false
}

// Options configure Launch. The zero value works once Binaries is set.
type Options struct {
	// Binaries are the programs to run; see FindBinaries.
	Binaries Binaries
	// Dir is where the Env's temporary directory is made; "" means
	// os.TempDir.
	Dir string
	// Port is the apiserver's secure port on 127.0.0.1; 0 picks a free one.
	Port int
	// ReadyTimeout bounds the wait for etcd's /health and the apiserver's
	// /readyz at each start; 0 means 60 seconds (a loaded machine is slow).
	ReadyTimeout time.Duration
	// ControllerManager also runs kube-controller-manager, signing
	// ServiceAccount tokens with the apiserver's key: namespaces get their
	// default ServiceAccount, deleted namespaces are emptied and go away,
	// and owner references are garbage-collected, as on a real cluster.
	ControllerManager bool
}

// The users of the static token file.
const (
	// AdminUser is in group system:masters: it may do anything.
	AdminUser = "admin"
	// LimitedUser is authenticated but has no RBAC bindings: it may read
	// discovery and nothing else.
	LimitedUser = "limited"
)

// Env is a running etcd and kube-apiserver on loopback ports, with its
// files in one temporary directory.
type Env struct {
	// Dir is the temporary directory holding the certificates, tokens,
	// kubeconfigs, logs and etcd's data. Close removes it.
	Dir string
	// Server is the apiserver's URL, https://127.0.0.1:PORT.
	Server string
	// Kubeconfig is the path of a kubeconfig for AdminUser, context "admin".
	Kubeconfig string
	// LimitedKubeconfig is the path of a kubeconfig for LimitedUser,
	// context "limited".
	LimitedKubeconfig string
	// AdminToken and LimitedToken are the users' bearer tokens.
	AdminToken, LimitedToken string
	// CAData is the PEM certificate that verifies the apiserver.
	CAData []byte
	// Kubectl is the kubectl executable, or "".
	Kubectl string
	// APIServerLog and EtcdLog are the processes' log files;
	// ControllerManagerLog kube-controller-manager's, when it runs.
	APIServerLog, EtcdLog, ControllerManagerLog string

	bins         Binaries
	readyTimeout time.Duration
	port         int
	etcdURL      string
	etcdName     string // the name etcd was started with
	apiArgs      []string
	etcd, api    *exec.Cmd
	etcdDone     chan error
	apiDone      chan error
	cm           *exec.Cmd
	cmDone       chan error
	cmArgs       []string
	client       *http.Client
}

// Launch starts etcd and kube-apiserver in a new temporary directory and
// returns when the apiserver's /readyz answers ok. On error nothing is left
// running and the directory is removed.
func Launch(ctx context.Context, opts Options) (*Env, error) {
	if opts.Binaries.APIServer == "" || opts.Binaries.Etcd == "" {
		return nil, errors.New("kubetest: Options.Binaries needs APIServer and Etcd (see FindBinaries)")
	}
	if opts.ControllerManager && opts.Binaries.ControllerManager == "" {
		return nil, &MissingError{Missing: []string{"kube-controller-manager not found (run `make testenv`, or set $DM_KUBE_BIN)"}}
	}
	removeStale(opts.Dir)
	dir, err := os.MkdirTemp(opts.Dir, dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	e := &Env{
		Dir:          dir,
		Kubectl:      opts.Binaries.Kubectl,
		bins:         opts.Binaries,
		readyTimeout: opts.ReadyTimeout,
		APIServerLog: filepath.Join(dir, "kube-apiserver.log"),
		EtcdLog:      filepath.Join(dir, "etcd.log"),
	}
	if e.readyTimeout <= 0 {
		e.readyTimeout = 60 * time.Second
	}
	err = e.start(ctx, opts.Port)
	if err == nil && opts.ControllerManager {
		e.ControllerManagerLog = filepath.Join(dir, "kube-controller-manager.log")
		err = e.StartControllerManager(ctx)
		if err != nil {
			if last := tail(e.ControllerManagerLog, 30); last != "" {
				err = fmt.Errorf("%w\nlast lines of %s:\n%s", err, e.ControllerManagerLog, last)
			}
			e.Close()
			return nil, err
		}
	}
	if err != nil {
		logFile := e.APIServerLog
		if _, statErr := os.Stat(logFile); statErr != nil {
			logFile = e.EtcdLog
		}
		if last := tail(logFile, 30); last != "" {
			err = fmt.Errorf("%w\nlast lines of %s:\n%s", err, logFile, last)
		}
		e.Close()
		return nil, err
	}
	return e, nil
}

// start writes the Env's files and starts etcd and the apiserver on port
// (0: a free one).
func (e *Env) start(ctx context.Context, port int) error {
	// The owner file lets a later Launch remove this directory if this
	// process dies without Close (a test binary killed at its -timeout).
	if err := os.WriteFile(filepath.Join(e.Dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	if err := e.writeFiles(); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	// A free port can be taken by someone else between our probe and the
	// program's bind; then it exits at once and another port is tried.
	for attempt := 1; ; attempt++ {
		err := e.startEtcd(ctx)
		if err == nil {
			break
		}
		if attempt == maxAttempts || !portTaken(err, e.EtcdLog) {
			return err
		}
	}
	for attempt := 1; ; attempt++ {
		p := port
		if p == 0 {
			var err error
			if p, err = freePort(); err != nil {
				return err
			}
		}
		if err := e.setPort(p); err != nil {
			return fmt.Errorf("kubetest: %w", err)
		}
		err := e.StartAPIServer(ctx)
		if err == nil {
			return nil
		}
		if port != 0 || attempt == maxAttempts || !portTaken(err, e.APIServerLog) {
			return err
		}
	}
}

const (
	dirPrefix = "kubetest-"
	ownerFile = "owner.pid"
)

// removeStale removes the directories of Envs under parent (os.TempDir when
// "") whose owning process no longer runs.
func removeStale(parent string) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, dirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(string(data))
		if err != nil || pid <= 0 || processExists(pid) {
			continue
		}
		os.RemoveAll(dir)
	}
}

// maxAttempts bounds the starts of one program when its port is taken.
const maxAttempts = 3

// exitedError is a program's exit before it was ready.
type exitedError struct{ msg string }

func (e *exitedError) Error() string { return e.msg }

// portTaken reports whether err is another etcd on the port, or an early
// exit whose log says a port was in use.
func portTaken(err error, logFile string) bool {
	if errors.Is(err, errOtherEtcd) {
		return true
	}
	var exited *exitedError
	if !errors.As(err, &exited) {
		return false
	}
	data, _ := os.ReadFile(logFile)
	return bytes.Contains(data, []byte("address already in use"))
}

// writeFiles writes certificates, keys and the token file, and fixes the
// apiserver's command line but for its port.
func (e *Env) writeFiles() error {
	certFile, keyFile, certPEM, err := writeServingCert(e.Dir)
	if err != nil {
		return err
	}
	e.CAData = certPEM
	saPub, saKey, err := writeServiceAccountKeys(e.Dir)
	if err != nil {
		return err
	}
	e.cmArgs = []string{
		"--bind-address=127.0.0.1",
		// No serving port: readiness is seen in what it does.
		"--secure-port=0",
		"--leader-elect=false",
		"--service-account-private-key-file=" + saKey,
		"--root-ca-file=" + certFile,
		"--use-service-account-credentials=false",
		"--controllers=*,-nodeipam,-nodelifecycle,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller,-persistentvolume-binder,-attachdetach,-persistentvolume-expander,-ephemeral-volume-controller,-csrsigning,-csrapproving,-csrcleaner",
		"--profiling=false",
	}
	if e.AdminToken, err = randomToken(); err != nil {
		return err
	}
	if e.LimitedToken, err = randomToken(); err != nil {
		return err
	}
	tokens := filepath.Join(e.Dir, "tokens.csv")
	data := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s\n",
		e.AdminToken, AdminUser, AdminUser, e.LimitedToken, LimitedUser, LimitedUser)
	if err := os.WriteFile(tokens, []byte(data), 0o600); err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	e.client = &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	e.apiArgs = []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--tls-cert-file=" + certFile,
		"--tls-private-key-file=" + keyFile,
		"--cert-dir=" + filepath.Join(e.Dir, "certs"),
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/16",
		// On loopback the default reconciler logs an error forever: the
		// kubernetes Service cannot point at 127.0.0.1.
		"--endpoint-reconciler-type=none",
		// ServiceAccount admission refuses pods until a controller-manager
		// has made the namespace's default ServiceAccount; there is none.
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--profiling=false",
	}
	return nil
}

// setPort sets the apiserver's port and writes the kubeconfigs for it.
func (e *Env) setPort(port int) error {
	e.port = port
	e.Server = "https://127.0.0.1:" + strconv.Itoa(port)
	e.Kubeconfig = filepath.Join(e.Dir, "admin.kubeconfig")
	if err := e.writeKubeconfig(e.Kubeconfig, AdminUser, e.AdminToken); err != nil {
		return err
	}
	e.LimitedKubeconfig = filepath.Join(e.Dir, "limited.kubeconfig")
	return e.writeKubeconfig(e.LimitedKubeconfig, LimitedUser, e.LimitedToken)
}

func (e *Env) writeKubeconfig(file, user, token string) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: %s
  context:
    cluster: kubetest
    user: %s
current-context: %s
`, e.Server, base64.StdEncoding.EncodeToString(e.CAData), user, token, user, user, user)
	return os.WriteFile(file, []byte(cfg), 0o600)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs a program with its output appended to logFile; done receives
// its exit.
func start(bin string, args []string, logFile string) (*exec.Cmd, chan error, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, nil, fmt.Errorf("kubetest: starting %s: %w", bin, err)
	}
	done := make(chan error, 1)
	go func() {
		done <- cmd.Wait()
		log.Close()
	}()
	return cmd, done, nil
}

// stop ends a process with SIGTERM, then SIGKILL after grace.
func stop(cmd *exec.Cmd, done chan error, grace time.Duration) {
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (e *Env) startEtcd(ctx context.Context) error {
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	e.etcdURL = "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	// A name of its own, by which this etcd is told from another that
	// took its port (checkEtcdName).
	token, err := randomToken()
	if err != nil {
		return err
	}
	name := "kubetest-" + token[:12]
	e.etcdName = name
	args := []string{
		"--name=" + name,
		"--data-dir=" + filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls=" + e.etcdURL,
		"--advertise-client-urls=" + e.etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + name + "=" + peerURL,
		"--log-level=warn",
		"--logger=zap",
	}
	// A failed attempt may have left a member with other ports.
	if err := os.RemoveAll(filepath.Join(e.Dir, "etcd")); err != nil {
		return err
	}
	e.etcd, e.etcdDone, err = start(e.bins.Etcd, args, e.EtcdLog)
	if err != nil {
		return err
	}
	err = e.waitReady(ctx, "etcd", e.etcdURL+"/health", "", e.etcdDone, e.EtcdLog)
	if err == nil {
		err = e.checkEtcdName(ctx, name)
	}
	if err != nil {
		stop(e.etcd, e.etcdDone, 5*time.Second)
		e.etcd, e.etcdDone = nil, nil
		return err
	}
	return nil
}

// errOtherEtcd is a healthy etcd at the Env's client URL that is not the
// one it started: another test process's, which took the port between
// freePort and this etcd's bind (this one then exits, but /health may
// answer first). Its data is that process's, so the Env must not use it.
var errOtherEtcd = errors.New("kubetest: another etcd answers on the port")

// checkEtcdName asks the etcd at the Env's client URL for its members
// (etcd's JSON gateway) and returns errOtherEtcd unless name is one.
func (e *Env) checkEtcdName(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.etcdURL+"/v3/cluster/member/list", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("kubetest: etcd's members: %w", err)
	}
	defer resp.Body.Close()
	var list struct {
		Members []struct{ Name string }
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list); err != nil {
		return fmt.Errorf("kubetest: etcd's members (%s): %w", resp.Status, err)
	}
	for _, m := range list.Members {
		if m.Name == name {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is not the etcd started as %s; see %s", errOtherEtcd, e.etcdURL, name, e.EtcdLog)
}

// StartAPIServer starts kube-apiserver on the Env's port with the same
// etcd, after StopAPIServer, and waits for /readyz. The data stored before
// the stop is still there. On error the apiserver is not running.
func (e *Env) StartAPIServer(ctx context.Context) error {
	if e.api != nil {
		return errors.New("kubetest: the apiserver is already running")
	}
	args := append([]string{"--etcd-servers=" + e.etcdURL, "--secure-port=" + strconv.Itoa(e.port)}, e.apiArgs...)
	var err error
	e.api, e.apiDone, err = start(e.bins.APIServer, args, e.APIServerLog)
	if err != nil {
		return err
	}
	if err := e.waitReady(ctx, "kube-apiserver", e.Server+"/readyz", e.AdminToken, e.apiDone, e.APIServerLog); err != nil {
		stop(e.api, e.apiDone, 5*time.Second)
		e.api, e.apiDone = nil, nil
		return err
	}
	return nil
}

// StartControllerManager starts kube-controller-manager against the
// apiserver, as the admin user, and waits until it has made the default
// namespace's default ServiceAccount (it works, and signs tokens).
func (e *Env) StartControllerManager(ctx context.Context) error {
	if e.cm != nil {
		return errors.New("kubetest: kube-controller-manager is already running")
	}
	if e.bins.ControllerManager == "" {
		return &MissingError{Missing: []string{"kube-controller-manager not found (run `make testenv`, or set $DM_KUBE_BIN)"}}
	}
	if e.ControllerManagerLog == "" {
		e.ControllerManagerLog = filepath.Join(e.Dir, "kube-controller-manager.log")
	}
	args := append([]string{"--kubeconfig=" + e.Kubeconfig}, e.cmArgs...)
	var err error
	e.cm, e.cmDone, err = start(e.bins.ControllerManager, args, e.ControllerManagerLog)
	if err != nil {
		return err
	}
	if err := e.waitServiceAccount(ctx); err != nil {
		stop(e.cm, e.cmDone, 5*time.Second)
		e.cm, e.cmDone = nil, nil
		return err
	}
	return nil
}

// waitServiceAccount polls for the default ServiceAccount of namespace
// default until it exists, the controller-manager exits or the ready
// timeout passes.
func (e *Env) waitServiceAccount(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.readyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-e.cmDone:
			e.cmDone <- err
			return &exitedError{fmt.Sprintf("kubetest: kube-controller-manager exited before it was ready (%v); see %s", err, e.ControllerManagerLog)}
		case <-ctx.Done():
			return fmt.Errorf("kubetest: kube-controller-manager made no default ServiceAccount after %v; see %s", e.readyTimeout, e.ControllerManagerLog)
		case <-tick.C:
		}
		code, _, err := e.Do(ctx, e.AdminToken, http.MethodGet, "/api/v1/namespaces/default/serviceaccounts/default", nil)
		if err == nil && code == http.StatusOK {
			return nil
		}
	}
}

// StopAPIServer stops kube-apiserver and leaves etcd running, as an
// apiserver that goes away in the middle of a client's work.
func (e *Env) StopAPIServer() error {
	if e.api == nil {
		return errors.New("kubetest: the apiserver is not running")
	}
	stop(e.api, e.apiDone, 5*time.Second)
	e.api, e.apiDone = nil, nil
	return nil
}

// waitReady polls url until it answers 200, the process exits, ctx ends or
// the ready timeout passes.
func (e *Env) waitReady(ctx context.Context, name, url, token string, done chan error, logFile string) error {
	ctx, cancel := context.WithTimeout(ctx, e.readyTimeout)
	defer cancel()
	client := e.client
	if !strings.HasPrefix(url, "https:") {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	last := "no answer"
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			done <- err // for the stop that follows
			return &exitedError{fmt.Sprintf("kubetest: %s exited before it was ready (%v); see %s", name, err, logFile)}
		case <-ctx.Done():
			return fmt.Errorf("kubetest: %s not ready at %s after %v (last answer: %s); see %s", name, url, e.readyTimeout, last, logFile)
		case <-tick.C:
		}
		ok, answer := poll(ctx, client, url, token)
		if ok {
			return nil
		}
		last = answer
	}
}

// poll asks url once, giving up after a few seconds (something else may
// hold the port and never answer), and says whether it answered 200.
func poll(ctx context.Context, client *http.Client, url, token string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode == http.StatusOK, fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(body))
}

// Close stops the apiserver and etcd and removes Dir. It is safe to call
// more than once.
func (e *Env) Close() error {
	stop(e.cm, e.cmDone, 5*time.Second)
	e.cm, e.cmDone = nil, nil
	stop(e.api, e.apiDone, 5*time.Second)
	e.api, e.apiDone = nil, nil
	stop(e.etcd, e.etcdDone, 10*time.Second)
	e.etcd, e.etcdDone = nil, nil
	if e.client != nil {
		e.client.CloseIdleConnections()
	}
	if e.Dir == "" {
		return nil
	}
	err := os.RemoveAll(e.Dir)
	e.Dir = ""
	return err
}

// LogTail returns the last n lines of the apiserver's log.
func (e *Env) LogTail(n int) string { return tail(e.APIServerLog, n) }

// tail returns the last n lines of a file, or "".
func tail(file string, n int) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// HTTPClient returns a client that trusts the apiserver's certificate.
// Requests need an Authorization header: "Bearer " + AdminToken or
// LimitedToken.
func (e *Env) HTTPClient() *http.Client { return e.client }

// Do sends a request to the apiserver as the user of token, with body (if
// not nil) encoded as JSON, and returns the status code and response body.
func (e *Env) Do(ctx context.Context, token, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, fmt.Errorf("kubetest: encoding %s %s: %w", method, path, err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.Server+path, r)
	if err != nil {
		return 0, nil, fmt.Errorf("kubetest: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("kubetest: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("kubetest: reading %s %s: %w", method, path, err)
	}
	return resp.StatusCode, data, nil
}

// CreateNamespace creates the namespace name as the admin user.
func (e *Env) CreateNamespace(ctx context.Context, name string) error {
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}
	code, body, err := e.Do(ctx, e.AdminToken, http.MethodPost, "/api/v1/namespaces", ns)
	if err != nil {
		return err
	}
	if code != http.StatusCreated {
		return fmt.Errorf("kubetest: creating namespace %s: %d %s", name, code, bytes.TrimSpace(body))
	}
	return nil
}
