package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// writeLog records the write calls a client makes.
type writeLog struct {
	mu    sync.Mutex
	calls []string
}

func (w *writeLog) add(verb string, obj any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, fmt.Sprintf("%s %s", verb, describe(obj)))
}

// take returns the calls recorded so far and forgets them.
func (w *writeLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	calls := w.calls
	w.calls = nil
	return calls
}

func describe(obj any) string {
	switch o := obj.(type) {
	case client.Object:
		return fmt.Sprintf("%T %s", o, client.ObjectKeyFromObject(o))
	case runtime.ApplyConfiguration:
		// Apply configurations of built-in types have name and namespace; encode for the rest.
		data, _ := json.Marshal(o)
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(data, &m)
		return fmt.Sprintf("%s %s/%s", m.Kind, m.Metadata.Namespace, m.Metadata.Name)
	}
	return fmt.Sprintf("%T", obj)
}

// countWrites wraps c so that every write call (create, update, patch, apply, delete, on the
// object or a subresource) is recorded in log before it is made.
func countWrites(c client.WithWatch, log *writeLog) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			log.add("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			log.add("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			log.add("patch", obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			log.add("apply", obj)
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			log.add("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			log.add("deleteAllOf", obj)
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			log.add(sub+" create", obj)
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			log.add(sub+" update", obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			log.add(sub+" patch", obj)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			log.add(sub+" apply", obj)
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
}
