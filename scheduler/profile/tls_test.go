package profile

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// secretsGoldenDir holds profiles whose extenders take their TLS material from Secrets. Their
// configurations name files that exist only in a scheduler pod, so they are kept apart from the
// goldens that the integration tier starts the real scheduler with.
var secretsGoldenDir = filepath.Join("testdata", "secrets")

// pemKeyMarker is in the header of every PEM private key block ("-----BEGIN EC PRIVATE KEY-----",
// "-----BEGIN PRIVATE KEY-----", ...).
const pemKeyMarker = "PRIVATE KEY"

// TestRenderExtenderTLSGolden renders extenders whose client certificates come from Secrets: the
// file paths are those of the Secrets' mounts, caFile only for a Secret that holds a ca.crt.
func TestRenderExtenderTLSGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join(secretsGoldenDir, "*.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no profiles in %s (%v)", secretsGoldenDir, err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			cfg, err := Render(readProfile(t, in), Settings{Namespace: testNamespace, CASecrets: sets.New("gpu-extender-client")})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			checkGolden(t, filepath.Join(secretsGoldenDir, name+".golden"), cfg.YAML)
			if errs := Validate(cfg.YAML); len(errs) > 0 {
				t.Errorf("the rendered config is invalid: %v", errs.ToAggregate())
			}
		})
	}
}

func TestRenderExtenderTLSPaths(t *testing.T) {
	ext := v1alpha1.Extender{URLPrefix: "https://e/x", TLSConfig: &v1alpha1.ExtenderTLSConfig{
		ServerName: ptr.To("e"),
		SecretRef:  v1alpha1.ExtenderSecretReference{Name: "client"},
	}}
	tests := []struct {
		name      string
		caSecrets sets.Set[string]
		wantCA    string
	}{
		{name: "Secret without ca.crt", caSecrets: nil, wantCA: ""},
		{name: "Secret with ca.crt", caSecrets: sets.New("client"), wantCA: "/etc/kubernetes/extenders/client/ca.crt"},
		{name: "another Secret has a ca.crt", caSecrets: sets.New("other"), wantCA: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := convertExtender(ext, tc.caSecrets).TLSConfig
			want := []string{"/etc/kubernetes/extenders/client/tls.crt", "/etc/kubernetes/extenders/client/tls.key", tc.wantCA, "e"}
			if diff := cmp.Diff(want, []string{got.CertFile, got.KeyFile, got.CAFile, got.ServerName}); diff != "" {
				t.Errorf("certFile, keyFile, caFile, serverName (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenderRefusesInlineKeysAndUnverifiedHTTPS checks that a profile or a process with an
// inline private key is refused with a field path and a message that says where the key goes,
// and that the key is never rendered even if the check were skipped; and that an HTTPS extender
// without a CA is refused unless it sets insecure, and a caData that is no certificate.
func TestRenderRefusesInlineKeysAndUnverifiedHTTPS(t *testing.T) {
	key := []byte("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n")
	withTLS := func(tls v1alpha1.ExtenderTLSConfig) []v1alpha1.Extender {
		return []v1alpha1.Extender{
			{URLPrefix: "http://plain/x", FilterVerb: ptr.To("filter")},
			{URLPrefix: "https://e/x", FilterVerb: ptr.To("filter"), TLSConfig: &tls},
		}
	}
	https := func(tls *v1alpha1.ExtenderTLSConfig) []v1alpha1.Extender {
		return []v1alpha1.Extender{
			{URLPrefix: "http://plain/x", FilterVerb: ptr.To("filter")},
			{URLPrefix: "https://e/x", FilterVerb: ptr.To("filter"), EnableHTTPS: ptr.To(true), TLSConfig: tls},
		}
	}
	ca, _ := testutil.KeyPair("extender-ca")
	const unverifiedHTTPSText = "enableHTTPS without a CA does not verify the extender's certificate: set caData, or a secretRef whose Secret has ca.crt, or insecure: true to call it unverified"
	tests := []struct {
		name      string
		extenders []v1alpha1.Extender
		want      field.ErrorList
	}{
		{name: "keyData", extenders: withTLS(v1alpha1.ExtenderTLSConfig{CertData: []byte("cert"), KeyData: key}),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "extenders").Index(1).Child("tlsConfig", "keyData"),
				"keyData is not accepted: put the client certificate and key in a Secret in the operator's namespace and name it in tlsConfig.secretRef")}},
		{name: "certData with secretRef", extenders: withTLS(v1alpha1.ExtenderTLSConfig{CertData: []byte("cert"), SecretRef: v1alpha1.ExtenderSecretReference{Name: "s"}}),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "extenders").Index(1).Child("tlsConfig", "certData"),
				"certData and secretRef are exclusive: with secretRef the client certificate is the Secret's tls.crt")}},
		{name: "secretRef and caData", extenders: withTLS(v1alpha1.ExtenderTLSConfig{CAData: ca, SecretRef: v1alpha1.ExtenderSecretReference{Name: "s"}})},
		{name: "caData that is no certificate", extenders: withTLS(v1alpha1.ExtenderTLSConfig{CAData: []byte("ca"), SecretRef: v1alpha1.ExtenderSecretReference{Name: "s"}}),
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "extenders").Index(1).Child("tlsConfig", "caData"), field.OmitValueType{}, "holds no PEM certificate")}},
		{name: "HTTPS without tlsConfig", extenders: https(nil),
			want: field.ErrorList{field.Required(field.NewPath("spec", "extenders").Index(1).Child("tlsConfig", "caData"), unverifiedHTTPSText)}},
		{name: "HTTPS with a client certificate and no CA", extenders: https(&v1alpha1.ExtenderTLSConfig{CertData: []byte("cert")}),
			want: field.ErrorList{field.Required(field.NewPath("spec", "extenders").Index(1).Child("tlsConfig", "caData"), unverifiedHTTPSText)}},
		{name: "HTTPS, insecure on purpose", extenders: https(&v1alpha1.ExtenderTLSConfig{Insecure: ptr.To(true)})},
		{name: "HTTPS with caData", extenders: https(&v1alpha1.ExtenderTLSConfig{CAData: ca})},
		{name: "insecure with caData", extenders: https(&v1alpha1.ExtenderTLSConfig{CAData: ca, Insecure: ptr.To(true)}),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "extenders").Index(1).Child("tlsConfig", "insecure"),
				"insecure: true and caData are exclusive: the scheduler's TLS client refuses a CA with insecure; remove one")}},
		// The Secret's ca.crt is checked when the Secret is read (controllers).
		{name: "HTTPS with a Secret", extenders: https(&v1alpha1.ExtenderTLSConfig{SecretRef: v1alpha1.ExtenderSecretReference{Name: "s"}})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ValidateExtenders(tc.extenders, field.NewPath("spec", "extenders"))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidateExtenders (-want +got):\n%s", diff)
			}
			p := testutil.MakeProfile("p").Obj()
			p.Spec.Extenders = tc.extenders
			_, err := Render(p, Settings{Namespace: testNamespace})
			if (err != nil) != (len(tc.want) > 0) {
				t.Fatalf("Render: error %v, want one: %t", err, len(tc.want) > 0)
			}
			if err != nil && !strings.Contains(err.Error(), tc.want[0].Error()) {
				t.Errorf("Render's error %q does not have %q", err, tc.want[0].Error())
			}
		})
	}

	// convertExtender is what writes the file; it has no field for the key.
	out, err := yaml.Marshal(convertExtender(withTLS(v1alpha1.ExtenderTLSConfig{KeyData: key})[1], nil))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), pemKeyMarker) || strings.Contains(string(out), "keyData") {
		t.Errorf("an extender with keyData was rendered with its key:\n%s", out)
	}
}

// TestNoPrivateKeyInRenderedConfigs scans every golden file, and every configuration rendered
// from the profiles under testdata, for PEM private key blocks: a rendered configuration goes
// into a ConfigMap, which is no place for a key.
func TestNoPrivateKeyInRenderedConfigs(t *testing.T) {
	scanned := 0
	scan := func(name string, data []byte) {
		t.Helper()
		scanned++
		if strings.Contains(string(data), pemKeyMarker) {
			t.Errorf("%s holds a PEM private key block", name)
		}
	}
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch filepath.Ext(path) {
		case ".golden":
			scan(path, data)
		case ".yaml":
			var p v1alpha1.SchedulerProfile
			if err := yaml.Unmarshal(data, &p); err != nil || p.Kind != "SchedulerProfile" {
				return nil
			}
			cfg, err := Render(&p, Settings{Namespace: testNamespace, CASecrets: sets.New(ExtenderSecrets(p.Spec.Extenders)...)})
			if err != nil {
				return err
			}
			scan("the configuration rendered from "+path, cfg.YAML)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 9 profiles, their goldens and the shared configuration's golden: fewer means the walk
	// missed some.
	if scanned < 19 {
		t.Errorf("scanned %d rendered configurations, want at least 19", scanned)
	}
}
