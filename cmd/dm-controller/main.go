// Command dm-controller reconciles dm's custom resources in a cluster: a
// TemplateInstance (dm.io/v1alpha1) names a template and its properties,
// and the controller keeps it deployed as dm deploy would, as the
// instance's ServiceAccount, with its status (Ready, Reconciling, Stalled)
// read from the objects it rendered. See package controller.
//
// Usage:
//
//	dm-controller [--kubeconfig FILE] [--context NAME]
//	              (--server URL | --registry-dir PREFIX=DIR ... | --github OWNER/REPO[@BRANCH] ... | --registry-oci PREFIX=oci://HOST/PATH ...)
//	              [--default-registry [HOST/]OWNER/REPO[/COLLECTION]]
//	              [--default-service-account NAME] [--concurrency N]
//	              [--leader-elect] [--metrics-addr ADDR] [--health-addr ADDR]
//	              [--install-crds=false]
//
// It runs until SIGINT or SIGTERM; /readyz on --health-addr answers 200
// once its caches have synced.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dmhq/dm/internal/api"
	"github.com/dmhq/dm/internal/controller"
	"github.com/dmhq/dm/internal/derrors"
	"github.com/dmhq/dm/internal/expand/engine"
	"github.com/dmhq/dm/internal/expand/helm"
	"github.com/dmhq/dm/internal/fetch"
	"github.com/dmhq/dm/internal/sandbox"
	"github.com/dmhq/dm/internal/signature"
	"github.com/dmhq/dm/internal/signature/sigstore"
	"github.com/dmhq/dm/internal/version"
)

func main() {
	// An expansion worker re-executes this binary; it serves and exits.
	if sandbox.IsWorker() {
		sandbox.ServeWorker(engines()...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "dm-controller:", err)
		os.Exit(1)
	}
}

// engines are the attached languages' engines the controller's workers
// render: Helm charts. Each render takes the cluster's .Capabilities from
// its request, and its lookups go to the controller, which reads as the
// instance's ServiceAccount: the workers hold no credentials. A
// long-running controller pays Helm's start-up cost once.
func engines() []engine.Engine {
	return []engine.Engine{&helm.Engine{}}
}

// serviceAccountNamespace is where a pod's ServiceAccount token mount says
// its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// podName names the controller's pod, NAMESPACE/NAME, for the leases it
// holds: POD_NAMESPACE and POD_NAME when the downward API sets them, else
// the pod's hostname (its name) in the namespace its ServiceAccount is
// mounted for; "" outside a pod.
func podName(getenv func(string) string) string {
	ns, name := getenv("POD_NAMESPACE"), getenv("POD_NAME")
	if ns == "" {
		b, err := os.ReadFile(serviceAccountNamespace)
		if err != nil {
			return name
		}
		ns = strings.TrimSpace(string(b))
	}
	if name == "" {
		name, _ = os.Hostname()
	}
	if ns == "" || name == "" {
		return name
	}
	return ns + "/" + name
}

// run parses args and runs the controller until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	var (
		kubeconfig, kubeContext string
		cfg                     controller.RunConfig
		dirs, githubs, ocis     []string
		plainHTTP               bool
		verify                  signature.PolicyFiles
		githubAPI, logLevel     string
		memory                  string
	)
	cmd := &cobra.Command{
		Use:           "dm-controller",
		Short:         "Reconcile dm TemplateInstances in a cluster",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var l slog.Level
			if err := l.UnmarshalText([]byte(logLevel)); err != nil {
				return derrors.Errorf(derrors.InvalidArgument, "--log-level %q: want debug, info, warn or error", logLevel)
			}
			cfg.Options.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l}))
			specs, err := api.FlagSpecs(dirs, githubs, githubAPI, getenv("GITHUB_TOKEN"))
			if err != nil {
				return err
			}
			for _, o := range ocis {
				spec, err := api.ParseOCISpec(o)
				if err != nil {
					return fmt.Errorf("--registry-oci: %w", err)
				}
				spec.OCI.PlainHTTP = plainHTTP
				specs = append(specs, spec)
			}
			if verify.Set() {
				if cfg.Server != "" {
					return derrors.Errorf(derrors.InvalidArgument, "--verify-key, --verify-identity, --trusted-root and --require-signature apply to the controller's own registries; with --server, registryd verifies with its per-registry policy")
				}
				pc, err := verify.Config()
				if err != nil {
					return err
				}
				for i := range specs {
					specs[i].Verify = pc
				}
				cfg.Checker = &sigstore.Checker{}
			}
			cfg.Registries = specs
			if (cfg.Server != "") == (len(specs) > 0) {
				return derrors.Errorf(derrors.InvalidArgument, "give either --server or --registry-dir/--github")
			}
			mem, err := sandbox.ParseBytes(memory)
			if err != nil {
				return fmt.Errorf("--expand-memory: %w", err)
			}
			cfg.Sandbox.MaxMemory = mem
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			rc.UserAgent = "dm-controller"
			cfg.REST = rc
			cfg.Options.DMVersion = version.Get().Short()
			cfg.Options.Pod = podName(getenv)
			return controller.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig `file` (default $KUBECONFIG, else ~/.kube/config, else in-cluster)")
	f.StringVar(&kubeContext, "context", "", "kubeconfig `context` to use")
	f.StringVar(&cfg.Server, "server", "", "registryd `URL` that resolves and expands templates")
	f.StringArrayVar(&dirs, "registry-dir", nil, "index local directory DIR as registry PREFIX, watched for changes (`PREFIX=DIR`, repeatable)")
	f.StringArrayVar(&githubs, "github", nil, "index a GitHub repository (`OWNER/REPO[@BRANCH]`, repeatable), with GITHUB_TOKEN as token")
	f.StringArrayVar(&ocis, "registry-oci", nil, "index an OCI registry (`PREFIX=oci://HOST/PATH`, repeatable), with Docker's configuration ($DOCKER_CONFIG) for credentials")
	f.BoolVar(&plainHTTP, "plain-http", false, "speak plain HTTP to the hosts of --registry-oci (a loopback or in-cluster registry)")
	f.StringArrayVar(&verify.Keys, "verify-key", nil, "verify the signatures of templates' versions with the public key in `FILE` (PEM ECDSA P-256; repeatable); an instance of a version that fails is Stalled, VerificationFailed")
	f.StringArrayVar(&verify.Identities, "verify-identity", nil, "trust keyless signatures of `ISSUER=SUBJECT-REGEXP` (regular expressions matched whole; repeatable; needs --trusted-root)")
	f.StringVar(&verify.TrustedRoot, "trusted-root", "", "Sigstore trusted_root.json `FILE` keyless signatures chain to")
	f.BoolVar(&verify.Required, "require-signature", false, "refuse versions without a signature")
	f.StringVar(&githubAPI, "github-api", fetch.DefaultGitHubAPI, "GitHub REST API base `URL`")
	f.StringVar(&cfg.DefaultRegistry, "default-registry", "", "registry short references resolve against, `[HOST/]OWNER/REPO[/COLLECTION]` (default: the only registry)")
	f.StringVar(&cfg.CacheDir, "cache-dir", "", "`directory` for persisted snapshots of GitHub registries (default: none)")
	f.DurationVar(&cfg.Refresh, "refresh", 5*time.Minute, "refresh every registry this often; directories are also watched")
	f.StringVar(&cfg.Options.DefaultServiceAccount, "default-service-account", "", "ServiceAccount `name` that instances without spec.serviceAccountName apply as (default: such instances are refused)")
	f.StringArrayVar(&cfg.Options.DefinitionGroups, "definition-groups", nil, "API `group` whose kinds TemplateDefinitions may define (repeatable; default none: every definition is Stalled, GroupNotAllowed)")
	f.IntVar(&cfg.Options.Concurrency, "concurrency", controller.DefaultConcurrency, "instances reconciled at once")
	f.BoolVar(&cfg.LeaderElect, "leader-elect", false, "run as one of several replicas: only the holder of a Lease reconciles")
	f.StringVar(&cfg.LeaderElectionNamespace, "leader-elect-namespace", "kube-system", "`namespace` of the leader election Lease")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", "127.0.0.1:8080", "`address` of /metrics (0: off)")
	f.StringVar(&cfg.HealthAddr, "health-addr", "127.0.0.1:8081", "`address` of /healthz and /readyz (0: off)")
	f.BoolVar(&cfg.InstallCRDs, "install-crds", true, "install or update the controller's CRDs at start")
	f.IntVar(&cfg.Sandbox.Workers, "expand-workers", max(2, runtime.GOMAXPROCS(0)), "expansion worker processes")
	f.StringVar(&memory, "expand-memory", "512MiB", "memory limit of each expansion worker (`SIZE`)")
	f.StringVar(&logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	cmd.SetVersionTemplate("dm-controller {{.Version}}\n")
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetArgs(args)
	cmd.SetContext(ctx)
	return cmd.Execute()
}
