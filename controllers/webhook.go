package controllers

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/admission"
	"github.com/schedops/scheduler-profile-operator/controllers/certs"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/webhooks"
)

// The rotator keeps the serving certificate in a Secret of the operator's namespace and the CA in
// the webhook configuration; the names are those config/default gives them.
// +kubebuilder:rbac:groups="",namespace=scheduler-profile-operator-system,resources=secrets,verbs=list;watch
// +kubebuilder:rbac:groups="",namespace=scheduler-profile-operator-system,resources=secrets,verbs=get;update,resourceNames=scheduler-profile-operator-webhook-server-cert
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;update,resourceNames=scheduler-profile-operator-validating-webhook-configuration

// Defaults of the webhook's settings: the names config/default gives the objects.
const (
	DefaultWebhookPort        = 9443
	DefaultWebhookSecret      = "scheduler-profile-operator-webhook-server-cert"
	DefaultWebhookConfigName  = "scheduler-profile-operator-validating-webhook-configuration"
	DefaultWebhookServiceName = "scheduler-profile-operator-webhook-service"
)

// WebhookOptions are the settings of the validating admission webhook of profiles and Schedulers.
type WebhookOptions struct {
	// Host and Port are where the webhook is served; an empty Host is every address.
	Host string
	Port int
	// CertDir holds tls.crt and tls.key; empty is controller-runtime's default
	// (<temp dir>/k8s-webhook-server/serving-certs), where OLM mounts the certificate it provides.
	CertDir string
	// CertRotation has the operator create and renew its own certificate in the Secret
	// SecretName and put its CA into the caBundle of the ValidatingWebhookConfiguration
	// ConfigName, for the Service ServiceName in the operator's namespace. Off, the certificate is provided (OLM) and only
	// read from CertDir.
	CertRotation bool
	SecretName   string
	ConfigName   string
	ServiceName  string
	// CertDNSName is the name the rotated certificate is issued for, when the apiserver reaches
	// the webhook by URL rather than through the Service (<ServiceName>.<namespace>.svc).
	CertDNSName string
}

// server is the webhook server of these options.
func (o *WebhookOptions) server() webhook.Server {
	return webhook.NewServer(webhook.Options{Host: o.Host, Port: o.Port, CertDir: o.certDir()})
}

// setupWebhook serves the validating webhook of both kinds, and makes the readiness check wait
// for it. With rotation, the handlers are registered, and so
// the server started, only once the rotator has written the certificate, it is in CertDir and
// the CA is in the webhook configurations: an apiserver that calls a ready operator can trust it.
func setupWebhook(mgr ctrl.Manager, o ManagerOptions, base plan.Planner) error {
	ready := &webhookReadiness{}
	if err := mgr.AddReadyzCheck("webhook", ready.check); err != nil {
		return fmt.Errorf("adding the webhook's readiness check: %w", err)
	}
	// A Scheduler's review reads what is stored rather than the cache, which can lag. A profile's
	// review reads the cache once it has caught up with what is stored (storedProfiles): a
	// profile created a moment ago counts in the next one's name and queue-sort checks, and a
	// review does not decode every profile of the cluster.
	stored, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("creating the webhook's client: %w", err)
	}
	// Discovery answers whether the cluster serves the APIs that feature gates need (clusterErrors).
	apis, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("creating the webhook's discovery client: %w", err)
	}
	// The reviews plan with the reconcilers' settings and memos, through readers and a discovery
	// of their own, and run no previews.
	direct := base
	direct.Reader, direct.APIs, direct.Previews = stored, plan.NewServedAPIs(apis), nil
	cached := direct
	cached.Reader = mgr.GetClient()
	register := func() error {
		if err := ctrl.NewWebhookManagedBy(mgr, &schedulingv1alpha1.SchedulerProfile{}).WithValidator(webhooks.NewProfileValidator(&admission.Reviewer{Planner: cached}, mgr.GetClient(), stored)).Complete(); err != nil {
			return fmt.Errorf("setting up the SchedulerProfile webhook: %w", err)
		}
		if err := ctrl.NewWebhookManagedBy(mgr, &schedulingv1alpha1.Scheduler{}).WithValidator(webhooks.NewSchedulerValidator(&admission.Reviewer{Planner: direct})).Complete(); err != nil {
			return fmt.Errorf("setting up the Scheduler webhook: %w", err)
		}
		ready.serving(mgr.GetWebhookServer().StartedChecker())
		return nil
	}
	w := o.Webhook
	if !w.CertRotation {
		return register()
	}
	certsReady := make(chan struct{})
	err = rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: o.Namespace, Name: w.SecretName},
		CertDir:        w.certDir(),
		CAName:         "scheduler-profile-operator-ca",
		CAOrganization: "scheduler-profile-operator",
		DNSName:        w.dnsName(o.Namespace),
		IsReady:        certsReady,
		Webhooks:       w.rotated(),
		FieldOwner:     schedulingv1alpha1.FieldManager,
		// Every replica serves the webhook, so every replica needs the certificate.
		RequireLeaderElection: false,
	})
	if err != nil {
		return fmt.Errorf("setting up the certificate rotation: %w", err)
	}
	if err := mgr.Add(&certs.Copy{Reader: stored, Key: types.NamespacedName{Namespace: o.Namespace, Name: w.SecretName}, Dir: w.certDir()}); err != nil {
		return fmt.Errorf("adding the webhook certificate's copy: %w", err)
	}
	go func() {
		<-certsReady
		if err := register(); err != nil {
			ready.fail(err)
		}
	}()
	return nil
}

// rotated are the webhook configurations whose caBundle the rotation sets.
func (o *WebhookOptions) rotated() []rotator.WebhookInfo {
	return []rotator.WebhookInfo{{Name: o.ConfigName, Type: rotator.Validating}}
}

// certDir is where the webhook server reads its certificate: CertDir, or controller-runtime's
// default, which is also where OLM mounts the certificate it provides.
func (o *WebhookOptions) certDir() string {
	if o.CertDir != "" {
		return o.CertDir
	}
	return filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
}

// dnsName is the name the rotated certificate is issued for.
func (o *WebhookOptions) dnsName(namespace string) string {
	if o.CertDNSName != "" {
		return o.CertDNSName
	}
	return fmt.Sprintf("%s.%s.svc", o.ServiceName, namespace)
}

// webhookReadiness fails the readiness check until the webhook server answers TLS connections.
type webhookReadiness struct {
	mu      sync.Mutex
	started healthz.Checker
	err     error
}

func (r *webhookReadiness) serving(started healthz.Checker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = started
}

func (r *webhookReadiness) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

func (r *webhookReadiness) check(req *http.Request) error {
	r.mu.Lock()
	started, err := r.started, r.err
	r.mu.Unlock()
	switch {
	case err != nil:
		return err
	case started == nil:
		return errors.New("the webhook's serving certificate is not ready")
	}
	return started(req)
}
