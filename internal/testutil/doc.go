// Package testutil is the one set of test helpers that every test tier shares: the unit tests of
// controllers/ and scheduler/, and the integration, bundle and end-to-end tests under test/.
//
// Objects are built fluently, in the shape of JobSet's pkg/util/testing: Make<Kind> returns a
// <Kind>Wrapper around the object, each method sets one thing and returns the wrapper, and Obj
// returns a deep copy, so one wrapper can serve as the base of several objects:
//
//	testutil.MakeProfile("binpack").SchedulerName("packer").Replicas(2).Obj()
//
// Each kind has its own file (profile.go, node.go, pod.go); a new API kind gets a file of its own
// with Make<Kind> in the same shape. Waits go through Poll, Eventually and Consistently (wait.go).
//
// The package imports only the project's API, Kubernetes' API and client packages, so that the
// tests of any package, the controllers' included, import it without a cycle.
package testutil
