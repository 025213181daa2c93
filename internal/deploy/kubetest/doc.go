// Package kubetest runs a real etcd and kube-apiserver on loopback ports for
// end-to-end tests of dm's deploy side (and, through hack/devcluster, for
// people). Objects are stored, validated and admitted with RBAC enforced,
// but no pods run: there is no kubelet, and by default no
// controller-manager, so no namespace gets a default ServiceAccount
// (ServiceAccount admission is off) and a namespace's deletion never
// finishes. Options.ControllerManager (SharedWith, StartWith) also runs
// kube-controller-manager, signing ServiceAccount tokens with the
// apiserver's key: default ServiceAccounts, namespace deletion and garbage
// collection then work as on a real cluster (dm-controller's tests).
//
// A test package starts one apiserver, lazily, and each test takes a fresh
// namespace:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
//
//	func TestDeploy(t *testing.T) {
//		env := kubetest.Shared(t)
//		ns := env.Namespace(t)
//		// run dm or client-go against env.Kubeconfig in ns
//	}
//
// The API:
//
//	func Main(m *testing.M)                       // TestMain: run tests, stop the shared Env, exit
//	func Run(m *testing.M) int                    // Main without the exit: returns the tests' code
//	func Shared(t testing.TB) *Env                // the package's Env (needs Main; else as Start)
//	func Start(t testing.TB) *Env                 // an Env of the test's own, closed at cleanup
//	func SharedWith(t testing.TB, opts Options) *Env // Shared, launched with opts (ControllerManager)
//	func StartWith(t testing.TB, opts Options) *Env  // Start with opts
//	func (e *Env) StartControllerManager(ctx context.Context) error // wait for the default ServiceAccount
//	func (e *Env) Namespace(t testing.TB) string  // a new namespace named after the test
//	func (e *Env) Restart(t testing.TB)           // stop and start the apiserver, same port and etcd
//	func (e *Env) StopAPIServer() error           // the apiserver goes away; etcd keeps the data
//	func (e *Env) StartAPIServer(ctx context.Context) error
//	func (e *Env) CreateNamespace(ctx context.Context, name string) error
//	func (e *Env) Do(ctx context.Context, token, method, path string, body any) (int, []byte, error)
//	func (e *Env) HTTPClient() *http.Client       // trusts the apiserver's certificate
//	func (e *Env) LogTail(n int) string           // last lines of the apiserver's log
//	func (e *Env) Close() error                   // stop both processes, remove Dir
//	func FindBinaries() (Binaries, error)         // $DM_KUBE_BIN, <repo>/.testenv/bin, etcd on $PATH
//	func Launch(ctx context.Context, opts Options) (*Env, error) // no testing.TB: for hack/devcluster
//
// Env's fields: Dir, Server (https://127.0.0.1:PORT), Kubeconfig (admin,
// context "admin", group system:masters), LimitedKubeconfig (context
// "limited", authenticated, no RBAC bindings), AdminToken, LimitedToken,
// CAData (PEM), Kubectl (path or ""), APIServerLog, EtcdLog.
//
// The programs come from $DM_KUBE_BIN, else from .testenv/bin of the
// repository (`make testenv` builds kube-apiserver, kube-controller-manager,
// kubectl and etcd there from the Go module proxy); etcd may also come from
// $PATH or /usr/bin/etcd. When one is missing Shared and Start fail the test
// with how to get it; with -short (make test-short) they skip it.
//
// Processes are killed by the kernel if the test binary dies (a -timeout
// panic runs no cleanups), and Close removes the temporary directory; a
// directory left by a process that died is removed by the next Launch.
// Shared starts the apiserver again if an earlier test stopped it. An
// Env's methods are not safe for concurrent use with Restart, StopAPIServer,
// StartAPIServer and Close; tests that restart a shared Env must not run in
// parallel with others using it.
package kubetest
