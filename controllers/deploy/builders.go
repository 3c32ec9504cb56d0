package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// Bootstrap roles that a kube-scheduler needs, bound rather than copied so they follow the
// cluster's Kubernetes version.
const (
	KubeSchedulerClusterRole   = "system:kube-scheduler"
	VolumeSchedulerClusterRole = "system:volume-scheduler"
	authReaderRole             = "extension-apiserver-authentication-reader"
	AuthReaderNamespace        = "kube-system"
)

// Where the scheduler container finds its configuration and serves its health checks.
const (
	// SchedulerContainer is the name of the scheduler's container.
	SchedulerContainer = "kube-scheduler"
	configDir          = "/etc/kubernetes/scheduler"
	tmpVolume          = "tmp"
	securePort         = 10259
	securePortName     = "https"
)

// KeptConfigMaps is how many ConfigMaps no ReplicaSet uses are kept for rollbacks; it is also the
// Deployment's revisionHistoryLimit.
const KeptConfigMaps = 3

// defaultLogVerbosity is the scheduler's -v when the profile does not set it.
const defaultLogVerbosity = 2

// ServiceAccount is the identity the scheduler pods run as, which the bindings below grant.
func ServiceAccount(proc *plan.Process, s plan.Settings) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(proc.Names.ServiceAccount(), s.Namespace).WithLabels(proc.Labels())
}

// ClusterRoleBinding binds the scheduler's ServiceAccount to a bootstrap ClusterRole.
func ClusterRoleBinding(proc *plan.Process, s plan.Settings, clusterRole string) *rbacv1ac.ClusterRoleBindingApplyConfiguration {
	return rbacv1ac.ClusterRoleBinding(proc.Names.ClusterRoleBinding(clusterRole[len("system:"):])).
		WithLabels(proc.Labels()).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(clusterRole)).
		WithSubjects(serviceAccountSubject(proc, s))
}

// AuthReaderRoleBinding lets the scheduler read the client CA of the cluster, which its
// secure port needs to authenticate requests.
func AuthReaderRoleBinding(proc *plan.Process, s plan.Settings) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(proc.Names.AuthReaderBinding(), AuthReaderNamespace).
		WithLabels(proc.Labels()).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(authReaderRole)).
		WithSubjects(serviceAccountSubject(proc, s))
}

// LeaseRole grants the scheduler its own lease and no other: system:kube-scheduler allows
// get and update only on the lease named kube-scheduler. The legacy lease is granted too while
// pods of a template that uses it may run, so that they keep leading until they stop.
func LeaseRole(proc *plan.Process, s plan.Settings) *rbacv1ac.RoleApplyConfiguration {
	names := []string{proc.LeaseName}
	if proc.GrantLegacy {
		names = append(names, proc.LegacyLease)
	}
	return rbacv1ac.Role(proc.Names.LeaseRole(), s.Namespace).
		WithLabels(proc.Labels()).
		WithRules(rbacv1ac.PolicyRule().
			WithAPIGroups("coordination.k8s.io").
			WithResources("leases").
			WithResourceNames(names...).
			WithVerbs("get", "update"))
}

// LeaseRoleBinding binds LeaseRole to the scheduler's ServiceAccount.
func LeaseRoleBinding(proc *plan.Process, s plan.Settings) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(proc.Names.LeaseRole(), s.Namespace).
		WithLabels(proc.Labels()).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(proc.Names.LeaseRole())).
		WithSubjects(serviceAccountSubject(proc, s))
}

func serviceAccountSubject(proc *plan.Process, s plan.Settings) *rbacv1ac.SubjectApplyConfiguration {
	return rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(proc.Names.ServiceAccount()).WithNamespace(s.Namespace)
}

// ConfigMap holds one rendered configuration. It is immutable and named after its hash:
// a restarted pod of an old ReplicaSet reads exactly the config that was rolled out with it.
func ConfigMap(proc *plan.Process, s plan.Settings, cfg *profile.Config) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(proc.Names.ConfigMap(cfg.Hash), s.Namespace).
		WithLabels(proc.Labels()).
		WithLabels(map[string]string{schedulingv1alpha1.LabelConfigHash: cfg.Hash, schedulingv1alpha1.LabelGeneration: strconv.FormatInt(proc.Owner.GetGeneration(), 10)}).
		WithImmutable(true).
		WithData(map[string]string{plan.ConfigFileKey: string(cfg.YAML)})
}

// Deployment runs the scheduler with the rendered configuration. Leader election is always
// on, so whatever the replica count a rollout starts a new pod first (maxSurge 1), keeps every old
// one until the new one is ready (maxUnavailable 0), and the new one takes the lease when an old
// leader releases it on shutdown: the profile is never without a scheduler.
func Deployment(proc *plan.Process, s plan.Settings, cfg *profile.Config) *appsv1ac.DeploymentApplyConfiguration {
	template := PodTemplate(proc, s, cfg)
	template.WithAnnotations(map[string]string{schedulingv1alpha1.AnnotationRevision: Revision(template)})
	return DeploymentWith(proc, s, template)
}

// DeploymentWith is the scheduler Deployment of a process running a given pod template.
func DeploymentWith(proc *plan.Process, s plan.Settings, template *corev1ac.PodTemplateSpecApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	return appsv1ac.Deployment(proc.Names.Deployment(), s.Namespace).
		WithLabels(proc.Labels()).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(plan.Replicas(proc.Run.Replicas)).
			WithRevisionHistoryLimit(KeptConfigMaps).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(proc.SelectorLabels())).
			WithStrategy(appsv1ac.DeploymentStrategy().
				WithType(appsv1.RollingUpdateDeploymentStrategyType).
				WithRollingUpdate(appsv1ac.RollingUpdateDeployment().
					WithMaxUnavailable(intstr.FromInt32(0)).
					WithMaxSurge(intstr.FromInt32(1)))).
			WithTemplate(template))
}

// PodTemplate is the scheduler pod: its container, the volumes of its configuration and of the
// extenders' Secrets, and the placement the owner asks for.
func PodTemplate(proc *plan.Process, s plan.Settings, cfg *profile.Config) *corev1ac.PodTemplateSpecApplyConfiguration {
	sched := proc.Run
	secretVolumes, secretMounts := extenderSecretVolumes(proc)
	spec := corev1ac.PodSpec().
		WithServiceAccountName(proc.Names.ServiceAccount()).
		WithAutomountServiceAccountToken(true).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithContainers(buildContainer(proc, s, secretMounts)).
		WithVolumes(
			corev1ac.Volume().WithName(plan.ConfigVolume).
				WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(proc.Names.ConfigMap(cfg.Hash))),
			// The secure port's self-signed certificate is written here; the root file
			// system is read-only.
			corev1ac.Volume().WithName(tmpVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	spec.WithVolumes(secretVolumes...)
	if len(sched.NodeSelector) > 0 {
		spec.WithNodeSelector(sched.NodeSelector)
	}
	for i := range sched.Tolerations {
		spec.WithTolerations(toleration(sched.Tolerations[i]))
	}
	if sched.Affinity != nil {
		spec.WithAffinity(affinity(sched.Affinity))
	}
	if pc := ptr.Deref(sched.PriorityClassName, ""); pc != "" {
		spec.WithPriorityClassName(pc)
	}
	annotations := map[string]string{schedulingv1alpha1.AnnotationConfigHash: cfg.Hash}
	if !proc.OnLegacyLease {
		annotations[schedulingv1alpha1.AnnotationLease] = proc.LeaseName
	}
	if proc.Secrets.Hash != "" {
		annotations[schedulingv1alpha1.AnnotationExtenderSecretsHash] = proc.Secrets.Hash
	}
	return corev1ac.PodTemplateSpec().
		WithLabels(proc.Labels()).
		WithAnnotations(annotations).
		WithSpec(spec)
}

// buildContainer is the scheduler's container, which mounts secretMounts besides its
// configuration and /tmp.
func buildContainer(proc *plan.Process, s plan.Settings, secretMounts []*corev1ac.VolumeMountApplyConfiguration) *corev1ac.ContainerApplyConfiguration {
	resources := proc.Run.Resources
	if len(resources.Requests) == 0 && len(resources.Limits) == 0 {
		resources = corev1.ResourceRequirements{Requests: plan.DefaultRequests}
	}
	probe := func(path string, period, failures int32) *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString(securePortName)).WithScheme(corev1.URISchemeHTTPS)).
			WithPeriodSeconds(period).
			WithFailureThreshold(failures)
	}
	// Copies: WithRequests and WithLimits keep the map they are given, and an apply decodes the
	// apiserver's answer into its configuration. Given plan.DefaultRequests or the cached profile's
	// maps, the answers of two passes at once were written into one map, which crashed the
	// operator ("concurrent map writes").
	rr := corev1ac.ResourceRequirements()
	if len(resources.Requests) > 0 {
		rr.WithRequests(maps.Clone(resources.Requests))
	}
	if len(resources.Limits) > 0 {
		rr.WithLimits(maps.Clone(resources.Limits))
	}
	return corev1ac.Container().
		WithName(SchedulerContainer).
		WithImage(s.Image).
		WithCommand("/kube-scheduler").
		WithArgs(schedulerArgs(proc)...).
		WithPorts(corev1ac.ContainerPort().WithName(securePortName).WithContainerPort(securePort).WithProtocol(corev1.ProtocolTCP)).
		WithLivenessProbe(probe("/livez", 10, 3).WithInitialDelaySeconds(10)).
		WithReadinessProbe(probe("/readyz", 5, 3)).
		WithResources(rr).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithRunAsNonRoot(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(plan.ConfigVolume).WithMountPath(configDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(tmpVolume).WithMountPath("/tmp")).
		WithVolumeMounts(secretMounts...)
}

// PodDisruptionBudget keeps one scheduler replica through voluntary disruptions; with
// leader election any one of them can lead. Only built for more than one replica.
func PodDisruptionBudget(proc *plan.Process, s plan.Settings) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(proc.Names.Deployment(), s.Namespace).
		WithLabels(proc.Labels()).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMinAvailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(proc.SelectorLabels())))
}

func toleration(t corev1.Toleration) *corev1ac.TolerationApplyConfiguration {
	out := corev1ac.Toleration()
	MustConvert(t, out)
	return out
}

func affinity(a *corev1.Affinity) *corev1ac.AffinityApplyConfiguration {
	out := corev1ac.Affinity()
	MustConvert(a, out)
	return out
}

// MustConvert copies a typed object into its apply configuration, which has the same JSON
// shape; it cannot fail for the core types it is used with.
func MustConvert(typed, applyConfig any) {
	data, err := json.Marshal(typed)
	if err != nil {
		panic(fmt.Sprintf("encoding %T: %v", typed, err))
	}
	if err := json.Unmarshal(data, applyConfig); err != nil {
		panic(fmt.Sprintf("decoding into %T: %v", applyConfig, err))
	}
}

// schedulerArgs are the scheduler's command-line arguments; feature gates come last, sorted, so
// that the same gates always give the same pod template.
func schedulerArgs(proc *plan.Process) []string {
	args := []string{
		"--config=" + configDir + "/" + plan.ConfigFileKey,
		fmt.Sprintf("--secure-port=%d", securePort),
		"--cert-dir=/tmp",
		fmt.Sprintf("--v=%d", ptr.Deref(proc.Run.LogVerbosity, defaultLogVerbosity)),
	}
	if len(proc.Run.FeatureGates) == 0 {
		return args
	}
	var gates []string
	for _, name := range slices.Sorted(maps.Keys(proc.Run.FeatureGates)) {
		gates = append(gates, fmt.Sprintf("%s=%t", name, proc.Run.FeatureGates[name]))
	}
	return append(args, "--feature-gates="+strings.Join(gates, ","))
}

// extenderSecretVolumes mount each Secret that the process's extenders name, read-only, at
// profile.ExtenderSecretDir(name), where the rendered configuration looks for its files.
func extenderSecretVolumes(proc *plan.Process) ([]*corev1ac.VolumeApplyConfiguration, []*corev1ac.VolumeMountApplyConfiguration) {
	var volumes []*corev1ac.VolumeApplyConfiguration
	var mounts []*corev1ac.VolumeMountApplyConfiguration
	for i, name := range profile.ExtenderSecrets(proc.Extenders) {
		// Secret names may be longer than a volume name can be.
		volume := fmt.Sprintf("extender-tls-%d", i)
		// Only the keys the scheduler reads are mounted: a ca.key or anything else in the Secret
		// stays out of the pods.
		items := []*corev1ac.KeyToPathApplyConfiguration{
			corev1ac.KeyToPath().WithKey(profile.SecretCertKey).WithPath(profile.SecretCertKey),
			corev1ac.KeyToPath().WithKey(profile.SecretKeyKey).WithPath(profile.SecretKeyKey),
		}
		if proc.Secrets.WithCA.Has(name) {
			items = append(items, corev1ac.KeyToPath().WithKey(profile.SecretCAKey).WithPath(profile.SecretCAKey))
		}
		volumes = append(volumes, corev1ac.Volume().WithName(volume).WithSecret(corev1ac.SecretVolumeSource().WithSecretName(name).WithItems(items...)))
		mounts = append(mounts, corev1ac.VolumeMount().WithName(volume).WithMountPath(profile.ExtenderSecretDir(name)).WithReadOnly(true))
	}
	return volumes, mounts
}

// Service exposes the scheduler pods' secure port, where kube-scheduler serves /metrics to
// callers allowed the nonResourceURL, so that one ServiceMonitor selecting the operator's
// managed-by label scrapes every managed scheduler. It is headless: a scraper reaches each pod
// (every replica has its own metrics, the leader's are the ones that schedule), and a virtual
// IP would only balance between them.
func Service(proc *plan.Process, s plan.Settings) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(proc.Names.Service(), s.Namespace).
		WithLabels(proc.Labels()).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithClusterIP(corev1.ClusterIPNone).
			WithSelector(proc.SelectorLabels()).
			WithPorts(corev1ac.ServicePort().
				WithName(securePortName).
				WithPort(securePort).
				WithTargetPort(intstr.FromString(securePortName)).
				WithProtocol(corev1.ProtocolTCP)))
}

// Revision hashes a pod template: the revision of a Deployment is its template, since a change
// of config and a change of placement alike make a new ReplicaSet.
func Revision(template *corev1ac.PodTemplateSpecApplyConfiguration) string {
	data, err := json.Marshal(template)
	if err != nil {
		panic(fmt.Sprintf("encoding a pod template: %v", err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:10]
}
