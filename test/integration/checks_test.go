package integration

import (
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// checkStatusNames checks the names a reconciled profile's status reports.
func checkStatusNames(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, schedulerName string) {
	t.Helper()
	st := p.Status
	if st.ConfigHash == "" {
		t.Fatalf("status.configHash is empty: %+v", st)
	}
	want := schedulingv1alpha1.SchedulerProfileStatus{
		ObservedGeneration: p.Generation,
		SchedulerName:      schedulerName,
		Conditions:         st.Conditions,
		ProcessStatus: schedulingv1alpha1.ProcessStatus{
			ConfigHash:     st.ConfigHash,
			ConfigMapName:  p.Name + "-config-" + st.ConfigHash,
			DeploymentName: p.Name + "-scheduler",
			// Set once the Deployment is available, which this check does not wait for.
			LastAvailableRevision: st.LastAvailableRevision,
		},
		// Written when the preview of the change ends, which this check does not wait for
		// (test/integration/preview_test.go checks it).
		Preview: st.Preview,
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Status of %s (-want +got):\n%s", p.Name, diff)
	}
}

// checkOwnedObjects checks the objects of a reconciled profile p: owner references, the
// scheduler's RBAC, its configuration and its Deployment.
func (k *cluster) checkOwnedObjects(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, schedulerName string, objs map[string]client.Object) {
	t.Helper()
	for _, what := range slices.Sorted(maps.Keys(objs)) {
		checkControlledBy(t, p, what, objs[what])
	}
	k.checkSchedulerRBAC(t, p, schedulerName, objs)
	cm := objs[objConfigMap].(*corev1.ConfigMap)
	checkConfigMap(t, p, schedulerName, cm, objs[objLeaseRole].(*rbacv1.Role))
	checkDeployment(t, p, cm, objs[objDeployment].(*appsv1.Deployment))
	checkMetricsService(t, objs[objService].(*corev1.Service), objs[objDeployment].(*appsv1.Deployment))
}

// checkControlledBy checks that obj has p as its controller, so that deleting p collects it.
func checkControlledBy(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, what string, obj client.Object) {
	t.Helper()
	want := []metav1.OwnerReference{{
		APIVersion:         schedulingv1alpha1.GroupVersion.String(),
		Kind:               "SchedulerProfile",
		Name:               p.Name,
		UID:                p.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}}
	if diff := cmp.Diff(want, obj.GetOwnerReferences()); diff != "" {
		t.Errorf("Owner references of %s %s (-want +got):\n%s", what, obj.GetName(), diff)
	}
	if got := obj.GetLabels()[schedulingv1alpha1.LabelProfile]; got != p.Name {
		t.Errorf("%s %s has label %s=%q, want %q", what, obj.GetName(), schedulingv1alpha1.LabelProfile, got, p.Name)
	}
}

// checkSchedulerRBAC checks that the scheduler's ServiceAccount is bound to the bootstrap roles of
// kube-scheduler (which exist: the bindings are not dangling) and to a Role for its own lease.
func (k *cluster) checkSchedulerRBAC(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, schedulerName string, objs map[string]client.Object) {
	t.Helper()
	ctx := t.Context()
	sa := objs[objServiceAccount].(*corev1.ServiceAccount)
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}
	roleRef := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	bindings := []struct {
		what      string
		namespace string
		roleRef   rbacv1.RoleRef
		got       func() (rbacv1.RoleRef, []rbacv1.Subject, string)
	}{
		{what: objKubeSchedulerBinding, roleRef: roleRef("ClusterRole", "system:kube-scheduler")},
		{what: objVolumeSchedulerBinding, roleRef: roleRef("ClusterRole", "system:volume-scheduler")},
		{what: objAuthReaderBinding, namespace: "kube-system", roleRef: roleRef("Role", "extension-apiserver-authentication-reader")},
		{what: objLeaseRoleBinding, namespace: operatorNamespace, roleRef: roleRef("Role", p.Name+"-scheduler-lease")},
	}
	for _, b := range bindings {
		var gotRef rbacv1.RoleRef
		var gotSubjects []rbacv1.Subject
		switch o := objs[b.what].(type) {
		case *rbacv1.ClusterRoleBinding:
			gotRef, gotSubjects = o.RoleRef, o.Subjects
		case *rbacv1.RoleBinding:
			gotRef, gotSubjects = o.RoleRef, o.Subjects
			if o.Namespace != b.namespace {
				t.Errorf("%s %s is in namespace %q, want %q", b.what, o.Name, o.Namespace, b.namespace)
			}
		}
		if diff := cmp.Diff(b.roleRef, gotRef); diff != "" {
			t.Errorf("roleRef of %s (-want +got):\n%s", b.what, diff)
		}
		if diff := cmp.Diff(subjects, gotSubjects); diff != "" {
			t.Errorf("Subjects of %s (-want +got):\n%s", b.what, diff)
		}
		var role client.Object = &rbacv1.ClusterRole{}
		if b.roleRef.Kind == "Role" {
			role = &rbacv1.Role{}
		}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: b.namespace, Name: b.roleRef.Name}, role); err != nil {
			t.Errorf("The %s %s that %s refers to: %v", b.roleRef.Kind, b.roleRef.Name, b.what, err)
		}
	}

	wantRules := []rbacv1.PolicyRule{{
		APIGroups:     []string{"coordination.k8s.io"},
		Resources:     []string{"leases"},
		ResourceNames: []string{profile.LeaseName(schedulerName)},
		Verbs:         []string{"get", "update"},
	}}
	if diff := cmp.Diff(wantRules, objs[objLeaseRole].(*rbacv1.Role).Rules); diff != "" {
		t.Errorf("Rules of the lease Role (-want +got):\n%s", diff)
	}
}

// checkConfigMap checks the rendered configuration: immutable, named and labelled with its hash,
// and electing its leader on the lease that the lease Role grants.
func checkConfigMap(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, schedulerName string, cm *corev1.ConfigMap, leaseRole *rbacv1.Role) {
	t.Helper()
	if cm.Immutable == nil || !*cm.Immutable {
		t.Errorf("ConfigMap %s is not immutable", cm.Name)
	}
	if got := cm.Labels[schedulingv1alpha1.LabelConfigHash]; got != p.Status.ConfigHash {
		t.Errorf("ConfigMap %s has label %s=%q, want the status' configHash %q", cm.Name, schedulingv1alpha1.LabelConfigHash, got, p.Status.ConfigHash)
	}
	var doc renderedConfig
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &doc); err != nil {
		t.Fatalf("Decoding config.yaml of %s: %v", cm.Name, err)
	}
	le := doc.LeaderElection
	if le.ResourceName != profile.LeaseName(schedulerName) || le.ResourceNamespace != operatorNamespace {
		t.Errorf("The configuration elects its leader on lease %s/%s, want %s/%s", le.ResourceNamespace, le.ResourceName, operatorNamespace, profile.LeaseName(schedulerName))
	}
	if len(doc.Profiles) != 1 || doc.Profiles[0].SchedulerName != schedulerName {
		t.Errorf("Profiles of the configuration: %+v, want one named %s", doc.Profiles, schedulerName)
	}
	if leaseRole.Namespace != le.ResourceNamespace {
		t.Errorf("The lease Role is in namespace %s, the lease in %s", leaseRole.Namespace, le.ResourceNamespace)
	}
	for _, rule := range leaseRole.Rules {
		if !slices.Equal(rule.ResourceNames, []string{le.ResourceName}) {
			t.Errorf("The lease Role grants %v, but the configuration uses the lease %s", rule.ResourceNames, le.ResourceName)
		}
	}
}

// checkDeployment checks that the scheduler Deployment runs the operator's image with the
// configuration of cm: its --config path resolves into the mounted ConfigMap, and the hash is on
// the pod template.
func checkDeployment(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, cm *corev1.ConfigMap, d *appsv1.Deployment) {
	t.Helper()
	tmpl := d.Spec.Template
	if got := tmpl.Annotations[schedulingv1alpha1.AnnotationConfigHash]; got != p.Status.ConfigHash {
		t.Errorf("Pod template annotation %s=%q, want the status' configHash %q", schedulingv1alpha1.AnnotationConfigHash, got, p.Status.ConfigHash)
	}
	if got, want := tmpl.Spec.ServiceAccountName, p.Name+"-scheduler"; got != want {
		t.Errorf("serviceAccountName %q, want %q", got, want)
	}
	if len(tmpl.Spec.Containers) != 1 {
		t.Fatalf("The pod template has %d containers, want 1", len(tmpl.Spec.Containers))
	}
	c := tmpl.Spec.Containers[0]
	if c.Image != testImage {
		t.Errorf("Image %q, want the operator's %q", c.Image, testImage)
	}
	configPath := ""
	for _, arg := range c.Args {
		if v, ok := strings.CutPrefix(arg, "--config="); ok {
			configPath = v
		}
	}
	if configPath == "" {
		t.Fatalf("The container args %q have no --config", c.Args)
	}
	mounted := ""
	for _, m := range c.VolumeMounts {
		for _, v := range tmpl.Spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && path.Dir(configPath) == path.Clean(m.MountPath) {
				mounted = v.ConfigMap.Name
			}
		}
	}
	if mounted != cm.Name {
		t.Errorf("--config=%s is in ConfigMap %q, want %q (volumes %+v, mounts %+v)", configPath, mounted, cm.Name, tmpl.Spec.Volumes, c.VolumeMounts)
	}
	if _, ok := cm.Data[path.Base(configPath)]; !ok {
		t.Errorf("ConfigMap %s has no key %s that --config=%s reads", cm.Name, path.Base(configPath), configPath)
	}
}
