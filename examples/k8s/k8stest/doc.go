// Package k8stest checks the Kubernetes manifests of examples/k8s by
// decoding them strictly into the Kubernetes API types, and checks that
// what they run is what distill and rewardd accept. It is a module of its
// own, so the main module does not take the Kubernetes dependency.
package k8stest
