package controllers

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsServerOptions serve the operator's metrics as the kubebuilder scaffold does: over HTTPS,
// to callers that the apiserver authenticates (TokenReview) and allows a get on the /metrics
// nonResourceURL (SubjectAccessReview), with the certificate of MetricsCertDir or else a
// self-signed one. MetricsSecure false serves plain HTTP to anyone, for a local run.
func (o ManagerOptions) metricsServerOptions() metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.MetricsBindAddress, SecureServing: o.MetricsSecure}
	if !o.MetricsSecure {
		return opts
	}
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	opts.CertDir = o.MetricsCertDir
	// HTTP/1.1 only: HTTP/2's stream handling was open to the rapid-reset attacks
	// (CVE-2023-44487, CVE-2023-39325), and a scraper needs nothing more.
	opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	return opts
}
