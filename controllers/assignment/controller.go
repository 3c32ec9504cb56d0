// Package assignment is namespace assignment's room: the reconciler that keeps the operator's
// admission policies (they assign a labelled namespace's pods to the scheduler name it asks for,
// project the node restrictions of a served name onto its pods and refuse a pod a profile's
// access does not admit), their pure builders, and the finder of the pods stranded on a name
// nobody serves.
package assignment

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/util/workqueue"
	admissiondefaults "k8s.io/kubernetes/pkg/apis/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// The operator keeps the admission policies of namespace assignment and their parameters.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicies;mutatingadmissionpolicybindings;validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;list;watch;create;update;patch
// The binding of the gangs' policy reads PodGroups as its params: whoever binds a policy to params
// must be able to read them.
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=podgroups,verbs=get;list;watch

// The policies are owned by the SchedulerProfile CRD, so that uninstalling the operator (which
// deletes its CRDs) deletes them too: the operator reads the CRD's uid.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get,resourceNames=schedulerprofiles.scheduling.schedops.io

// Reconciler keeps the admission policies of namespace assignment and their bindings, with the
// served names written into them, as the profiles' status says: one key, every change of a
// profile, and every change of the objects themselves, reconciles all of them.
type Reconciler struct {
	client client.Client
	// apiReader reads the SchedulerProfile CRD, which the cache does not hold.
	apiReader client.Reader
	namespace string
	// gangs answers whether the cluster serves PodGroups.
	gangs *plan.ServedAPIs
	// stranded looks at the pending pods again when the served names change; served are the
	// served names of the latest pass.
	stranded *StrandedPods
	served   map[string]bool
	// owner is the SchedulerProfile CRD, the owner of the policies, once read.
	owner *metav1.OwnerReference
	// restrictions are the node restrictions of the running configurations, read once each.
	restrictions runningRestrictions
	// profilesIn reads the entries of a running configuration by scheduler name (the operator's
	// memo parses each ConfigMap once).
	profilesIn func(*corev1.ConfigMap) (map[string]profile.Profile, error)
}

// NewReconciler returns the reconciler of assignment for an operator in namespace: c is the
// manager's client, apiReader reads what the cache does not hold, gangs answers whether PodGroups
// are served, stranded is looked at again when the served names change, and profilesIn reads the
// entries of a running configuration.
func NewReconciler(c client.Client, apiReader client.Reader, namespace string, gangs *plan.ServedAPIs, stranded *StrandedPods,
	profilesIn func(*corev1.ConfigMap) (map[string]profile.Profile, error)) *Reconciler {
	return &Reconciler{client: c, apiReader: apiReader, namespace: namespace, gangs: gangs, stranded: stranded,
		restrictions: runningRestrictions{}, profilesIn: profilesIn}
}

// profileCRD is the CustomResourceDefinition of SchedulerProfiles.
const profileCRD = "schedulerprofiles.scheduling.schedops.io"

// ownerOfPolicies is the owner reference of the policies to the SchedulerProfile CRD; nil while
// it cannot be read (the policies are then kept without an owner).
func (r *Reconciler) ownerOfPolicies(ctx context.Context) *metav1.OwnerReference {
	if r.owner != nil || r.apiReader == nil {
		return r.owner
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := r.apiReader.Get(ctx, client.ObjectKey{Name: profileCRD}, crd); err != nil {
		log.FromContext(ctx).V(1).Info("The policies of assignment are kept without an owner", "reason", err.Error())
		return nil
	}
	r.owner = &metav1.OwnerReference{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition", Name: crd.Name, UID: crd.UID}
	return r.owner
}

// assignmentKey is the one request of the assignmentReconciler.
var assignmentKey = reconcile.Request{NamespacedName: client.ObjectKey{Name: AssignPolicyName}}

// SetupWithManager watches the profiles, the policies and their bindings, and
// reconciles once at start, so that every install path gets the policies.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{assignmentKey} })
	ours := builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return obj.GetLabels()[plan.LabelComponent] == "assignment"
	}))
	b := ctrl.NewControllerManagedBy(mgr).
		Named("assignment").
		Watches(&schedulingv1alpha1.SchedulerProfile{}, one, builder.WithPredicates(assignmentChange)).
		Watches(&corev1.Pod{}, one, builder.WithPredicates(schedulerServingChange)).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(assignmentKey)
			return nil
		}))
	for _, obj := range []client.Object{&admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}} {
		b = b.Watches(obj, one, ours)
	}
	return b.Complete(r)
}

// schedulerServingChange passes the scheduler pods that start or stop serving (podServes): the
// projections read the configurations of those that serve.
var schedulerServingChange = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return plan.IsSchedulerPod(e.Object) },
	DeleteFunc: func(e event.DeleteEvent) bool { return plan.IsSchedulerPod(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		a, aok := e.ObjectOld.(*corev1.Pod)
		b, bok := e.ObjectNew.(*corev1.Pod)
		return aok && bok && plan.IsSchedulerPod(b) && plan.PodServes(a) != plan.PodServes(b)
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// assignmentChange passes the changes of a profile that assignment reads: its scheduler names,
// access, projection, conditions and deletion.
var assignmentChange = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		a, b := e.ObjectOld.(*schedulingv1alpha1.SchedulerProfile), e.ObjectNew.(*schedulingv1alpha1.SchedulerProfile)
		return a.Status.ServedSchedulerName != b.Status.ServedSchedulerName || profile.SchedulerName(a) != profile.SchedulerName(b) ||
			!equality.Semantic.DeepEqual(a.Spec.Access, b.Spec.Access) || a.Spec.Projection != b.Spec.Projection || !equality.Semantic.DeepEqual(a.Status.Conditions, b.Status.Conditions) ||
			!a.DeletionTimestamp.Equal(b.DeletionTimestamp)
	},
}

// Reconcile applies the policies where they differ from what they should be.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var profiles schedulingv1alpha1.SchedulerProfileList
	if err := r.client.List(ctx, &profiles); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing SchedulerProfiles: %w", err)
	}
	served, notServed := assignmentNames(profiles.Items)
	if !maps.Equal(served, r.served) {
		r.served = served
		r.stranded.Poke()
	}
	gangs, err := r.gangs.ServesIfAsked(profile.GateAPI{GroupVersion: podGroupsAPI.Group + "/" + podGroupsAPI.Version, Resource: podGroupsAPI.Resource})
	if err != nil {
		return reconcile.Result{}, err
	}
	projections, err := r.projections(ctx, profiles.Items)
	if err != nil {
		return reconcile.Result{}, err
	}
	owner := r.ownerOfPolicies(ctx)
	for _, obj := range assignmentPolicies(r.namespace, namesData(served, notServed), accessOf(profiles.Items), gangs, projections) {
		if owner != nil {
			obj.(metav1.Object).SetOwnerReferences([]metav1.OwnerReference{*owner})
		}
		if err := r.applyPolicy(ctx, obj); err != nil {
			return reconcile.Result{}, err
		}
	}
	if !gangs {
		// PodGroups may be served later: asked again like a gate's missing API.
		return reconcile.Result{RequeueAfter: plan.APIRecheck}, nil
	}
	return reconcile.Result{}, nil
}

// applyPolicy applies one of the objects of assignmentPolicies, with the values the apiserver
// defaults (a policy's match policy and empty selectors, a rule's scope) written out: it keeps
// them as the operator's fields, which extract reads back, so that without them the live policy
// never equals the desired one and every pass would patch it again (each patch makes the
// apiserver type-check every CEL expression of the policy).
func (r *Reconciler) applyPolicy(ctx context.Context, obj any) error {
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		admissiondefaults.SetObjectDefaults_MutatingAdmissionPolicy(o)
		return applyTyped(ctx, r, o, admissionregistrationv1ac.MutatingAdmissionPolicy(o.Name), admissionregistrationv1ac.ExtractMutatingAdmissionPolicy)
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		admissiondefaults.SetObjectDefaults_MutatingAdmissionPolicyBinding(o)
		return applyTyped(ctx, r, o, admissionregistrationv1ac.MutatingAdmissionPolicyBinding(o.Name), admissionregistrationv1ac.ExtractMutatingAdmissionPolicyBinding)
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		admissiondefaults.SetObjectDefaults_ValidatingAdmissionPolicy(o)
		return applyTyped(ctx, r, o, admissionregistrationv1ac.ValidatingAdmissionPolicy(o.Name), admissionregistrationv1ac.ExtractValidatingAdmissionPolicy)
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		admissiondefaults.SetObjectDefaults_ValidatingAdmissionPolicyBinding(o)
		return applyTyped(ctx, r, o, admissionregistrationv1ac.ValidatingAdmissionPolicyBinding(o.Name), admissionregistrationv1ac.ExtractValidatingAdmissionPolicyBinding)
	}
	return fmt.Errorf("no apply of %T", obj)
}

// applyTyped applies the typed object obj as the apply configuration ac (filled from obj's JSON
// less its status, which is the apiserver's), reading what schedulingv1alpha1.FieldManager owns
// of the live object with extract.
func applyTyped[T client.Object, A runtime.ApplyConfiguration](ctx context.Context, r *Reconciler, obj T, ac A, extract func(T, string) (A, error)) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding %T %s: %w", obj, obj.GetName(), err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("decoding %T %s: %w", obj, obj.GetName(), err)
	}
	delete(fields, "status")
	if data, err = json.Marshal(fields); err != nil {
		return fmt.Errorf("encoding %T %s: %w", obj, obj.GetName(), err)
	}
	if err := json.Unmarshal(data, ac); err != nil {
		return fmt.Errorf("decoding %T %s: %w", obj, obj.GetName(), err)
	}
	_, err = deploy.Apply(ctx, r.client, deploy.Owned{
		Desired:  ac,
		Key:      client.ObjectKeyFromObject(obj),
		Observed: obj.DeepCopyObject().(T),
		Extract: func(live client.Object) (runtime.ApplyConfiguration, error) {
			return extract(live.(T), schedulingv1alpha1.FieldManager)
		},
	})
	return err
}
