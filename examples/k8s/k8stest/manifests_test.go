package k8stest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
	"github.com/rubricforge/rubricforge/job"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// objects are the manifests of examples/k8s, decoded.
type objects struct {
	jobs        map[string]*batchv1.Job
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	claims      map[string]*corev1.PersistentVolumeClaim
	configMaps  map[string]*corev1.ConfigMap
}

// load decodes every document of every manifest strictly into the API type
// of its kind: an unknown or misspelt field, a value of the wrong type or a
// kind this test does not know fails.
func load(t *testing.T) objects {
	t.Helper()
	files, err := filepath.Glob("../*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in examples/k8s: %v", err)
	}
	o := objects{map[string]*batchv1.Job{}, map[string]*appsv1.Deployment{}, map[string]*corev1.Service{},
		map[string]*corev1.PersistentVolumeClaim{}, map[string]*corev1.ConfigMap{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s document %d: %v", f, i+1, err)
			}
			where := fmt.Sprintf("%s document %d (%s %s)", f, i+1, head.APIVersion, head.Kind)
			strict := func(v any) {
				if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
					t.Errorf("%s does not decode strictly: %v", where, err)
				}
			}
			switch head.APIVersion + " " + head.Kind {
			case "batch/v1 Job":
				v := &batchv1.Job{}
				strict(v)
				o.jobs[v.Name] = v
			case "apps/v1 Deployment":
				v := &appsv1.Deployment{}
				strict(v)
				o.deployments[v.Name] = v
			case "v1 Service":
				v := &corev1.Service{}
				strict(v)
				o.services[v.Name] = v
			case "v1 PersistentVolumeClaim":
				v := &corev1.PersistentVolumeClaim{}
				strict(v)
				o.claims[v.Name] = v
			case "v1 ConfigMap":
				v := &corev1.ConfigMap{}
				strict(v)
				o.configMaps[v.Name] = v
			default:
				t.Errorf("%s: a kind this test does not check", where)
			}
		}
	}
	return o
}

// TestStrictDecodingCatchesAMisspeltField: the decoding above fails on a
// field the API does not have, so a typo in a manifest cannot pass.
func TestStrictDecodingCatchesAMisspeltField(t *testing.T) {
	bad := "apiVersion: batch/v1\nkind: Job\nspec:\n  completionMod: Indexed\n"
	if err := yaml.UnmarshalStrict([]byte(bad), &batchv1.Job{}); err == nil {
		t.Fatal("completionMod decoded without an error")
	}
}

var partitionRE = regexp.MustCompile(`--partition \$JOB_COMPLETION_INDEX/(\d+)`)

// TestIndexedJob: the workers are an Indexed Job whose completion index is
// each worker's partition, one run directory per index on the claim, the
// job file from the ConfigMap, the key from a Secret, and memory sized for
// a distill run.
func TestIndexedJob(t *testing.T) {
	o := load(t)
	job := o.jobs["distill-big"]
	if job == nil {
		t.Fatal("no Job distill-big")
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed", s.CompletionMode)
	}
	c := container(t, job.Spec.Template.Spec, "distill")
	script := strings.Join(append(c.Command, c.Args...), " ")
	m := partitionRE.FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("the worker's command has no --partition $JOB_COMPLETION_INDEX/K:\n%s", script)
	}
	k := m[1]
	if s.Completions == nil || fmt.Sprint(*s.Completions) != k || s.Parallelism == nil || fmt.Sprint(*s.Parallelism) != k {
		t.Errorf("completions %v and parallelism %v, --partition I/%s: they must agree", deref(s.Completions), deref(s.Parallelism), k)
	}
	if !strings.Contains(script, "--out /runs/big/part-$JOB_COMPLETION_INDEX ") {
		t.Errorf("each index needs its own run directory:\n%s", script)
	}
	if env := envVar(c, "OPENAI_API_KEY"); env == nil || env.ValueFrom == nil || env.ValueFrom.SecretKeyRef == nil {
		t.Errorf("OPENAI_API_KEY is not taken from a Secret: %+v", env)
	}
	// Measured at the ConfigMap's sizes (n=8, 16,384-token rollouts, 512 in
	// flight, shards of 100): 1,012 MiB peak, 728 MiB under GOMEMLIMIT=700MiB.
	if lim := c.Resources.Limits[corev1.ResourceMemory]; lim.Cmp(resource.MustParse("1100Mi")) < 0 {
		t.Errorf("memory limit %s is below a distill run's measured peak at the job's sizes (1,012 MiB)", lim.String())
	}
	if env := envVar(c, "GOMEMLIMIT"); env == nil {
		t.Errorf("no GOMEMLIMIT: the Go runtime would not collect before the kernel kills the pod")
	} else if gl := resource.MustParse(strings.TrimSuffix(env.Value, "B")); gl.Cmp(c.Resources.Limits[corev1.ResourceMemory]) >= 0 {
		t.Errorf("GOMEMLIMIT %s is not under the memory limit", env.Value)
	}
	if lim := c.Resources.Limits[corev1.ResourceMemory]; lim.Cmp(c.Resources.Requests[corev1.ResourceMemory]) < 0 {
		t.Errorf("memory limit %s under the request", lim.String())
	}
	checkMounts(t, o, job.Spec.Template.Spec, c, "/runs")
	config := mountedConfigMap(t, o, job.Spec.Template.Spec, c, "/etc/rubricforge")
	if !strings.Contains(script, "--config /etc/rubricforge/job.yaml") {
		t.Errorf("the worker does not run the job file of the ConfigMap:\n%s", script)
	}
	checkJobFile(t, config.Data["job.yaml"], k)

	merge := o.jobs["distill-big-merge"]
	if merge == nil {
		t.Fatal("no Job distill-big-merge")
	}
	mc := container(t, merge.Spec.Template.Spec, "merge")
	if ms := strings.Join(append(mc.Command, mc.Args...), " "); !strings.Contains(ms, "distill merge /runs/big/part-* --out /runs/big/all") {
		t.Errorf("the merge job does not merge the workers' directories:\n%s", ms)
	}
	checkMounts(t, o, merge.Spec.Template.Spec, mc, "/runs")
	if req := mc.Resources.Requests[corev1.ResourceMemory]; req.Cmp(resource.MustParse("225Mi")) < 0 {
		t.Errorf("merge memory request %s is below the measured peak of a 1,048,576-record merge (225 MiB)", req.String())
	}
}

// checkJobFile: the ConfigMap's job file is a valid distill job for every
// partition.
func checkJobFile(t *testing.T, text, k string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	job, err := job.PrepareJob(path, func(j *job.Job) {
		j.Out, j.Partition = "/runs/big/part-0", "0/"+k
	})
	if err != nil {
		t.Errorf("the ConfigMap's job.yaml is not a usable job: %v", err)
	}
	if job.Rollout.APIKeyEnv != "OPENAI_API_KEY" {
		t.Errorf("the job reads its key from %q, the pod sets OPENAI_API_KEY", job.Rollout.APIKeyEnv)
	}
}

// TestRewarddDeployment: rewardd behind a Service, ready on /healthz, the
// token from a Secret, the export from the claim.
func TestRewarddDeployment(t *testing.T) {
	o := load(t)
	d := o.deployments["rewardd"]
	if d == nil {
		t.Fatal("no Deployment rewardd")
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("replicas %v: one replica stops scoring on every restart", deref(d.Spec.Replicas))
	}
	pod := d.Spec.Template
	for k, v := range d.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("the selector %s=%s does not select the pods (%v)", k, v, pod.Labels)
		}
	}
	c := container(t, pod.Spec, "rewardd")
	args := flags(c.Args)
	port := containerPort(t, c, "http")
	if args["addr"] != fmt.Sprintf("0.0.0.0:%d", port) || args["allow-remote"] != "true" {
		t.Errorf("--addr %q (--allow-remote %q), want 0.0.0.0:%d: rewardd binds loopback unless told", args["addr"], args["allow-remote"], port)
	}
	p := c.ReadinessProbe
	if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "http" {
		t.Errorf("readiness probe %+v, want GET /healthz on the http port", p)
	}
	tokenVar := args["token-env"]
	if env := envVar(c, tokenVar); tokenVar == "" || env == nil || env.ValueFrom == nil || env.ValueFrom.SecretKeyRef == nil {
		t.Errorf("--token-env %q is not set from a Secret", tokenVar)
	}
	if env := envVar(c, args["judge-api-key-env"]); env == nil || env.ValueFrom == nil || env.ValueFrom.SecretKeyRef == nil {
		t.Errorf("--judge-api-key-env %q is not set from a Secret", args["judge-api-key-env"])
	}
	if !strings.HasPrefix(args["corpus"], "/runs/") {
		t.Errorf("--corpus %q is not on the mounted volume", args["corpus"])
	}
	checkMounts(t, o, pod.Spec, c, "/runs")
	if req := c.Resources.Requests[corev1.ResourceMemory]; req.Cmp(resource.MustParse("517Mi")) < 0 {
		t.Errorf("memory request %s is below rewardd's measured peak loading 100,000 records (517 MiB)", req.String())
	}
	checkRewarddMemory(t, c, args)
	drain, err := time.ParseDuration(args["drain-timeout"])
	if grace := pod.Spec.TerminationGracePeriodSeconds; err != nil || grace == nil || time.Duration(*grace)*time.Second <= drain {
		t.Errorf("terminationGracePeriodSeconds %v must exceed --drain-timeout %q, or requests in flight are cut off", deref(grace), args["drain-timeout"])
	}
	svc := o.services["rewardd"]
	if svc == nil {
		t.Fatal("no Service rewardd")
	}
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, the pods are %v", k, v, pod.Labels)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("service ports %+v, want one to the http port", svc.Spec.Ports)
	}
}

// checkRewarddMemory: the memory limit holds rewardd's measured need at its
// flags (README, rewardd: memory): the index of 100,000 records (393 MiB),
// 2.2 bytes per byte of --max-inflight-bytes (the bodies and their decoded
// copies, examples/trainers/rewardd_memory.py with GOMEMLIMIT set) and 64
// MiB for the rest; GOMEMLIMIT is set under the limit, so that the
// collector works before the kernel kills.
func checkRewarddMemory(t *testing.T, c corev1.Container, args map[string]string) {
	t.Helper()
	const mib = 1 << 20
	inflight := int64(512 * mib) // the flag's default
	if v, ok := args["max-inflight-bytes"]; ok {
		if _, err := fmt.Sscan(v, &inflight); err != nil {
			t.Errorf("--max-inflight-bytes %q: %v", v, err)
		}
	}
	need := 393*mib + inflight*22/10 + 64*mib
	lim := c.Resources.Limits[corev1.ResourceMemory]
	if lim.Value() < need {
		t.Errorf("memory limit %s is below rewardd's need at --max-inflight-bytes %d: %d MiB", lim.String(), inflight, need/mib)
	}
	env := envVar(c, "GOMEMLIMIT")
	if env == nil {
		t.Fatal("GOMEMLIMIT is not set: without it the heap grows to twice what is live before a collection")
	}
	soft, err := resource.ParseQuantity(strings.TrimSuffix(strings.TrimSuffix(env.Value, "B"), "i") + "i")
	if err != nil || soft.Value() < need || soft.Cmp(lim) >= 0 {
		t.Errorf("GOMEMLIMIT %q (%v), want between the need (%d MiB) and the limit %s", env.Value, err, need/mib, lim.String())
	}
}

// TestFlagsExist: every flag the manifests give distill and rewardd is one
// the commands have.
func TestFlagsExist(t *testing.T) {
	o := load(t)
	// The commands as the root module's end-to-end tests build them, once
	// for every test run of these sources (testbin).
	bins := map[string]string{"distill": testbin.Command(t, "cmd/distill"), "rewardd": testbin.Command(t, "cmd/rewardd")}
	help := func(args ...string) string {
		var out bytes.Buffer
		cmd := exec.Command(bins[args[0]], append(args[1:], "-h")...)
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Run()
		return out.String()
	}
	check := func(where, usage string, args []string) {
		for name := range flags(args) {
			if !strings.Contains(usage, "  -"+name+" ") && !strings.Contains(usage, "  -"+name+"\n") {
				t.Errorf("%s: --%s is not a flag of the command", where, name)
			}
		}
	}
	check("rewardd", help("rewardd"), container(t, o.deployments["rewardd"].Spec.Template.Spec, "rewardd").Args)
	script := strings.Join(container(t, o.jobs["distill-big"].Spec.Template.Spec, "distill").Args, " ")
	run := script[strings.Index(script, "distill run")+len("distill run"):]
	check("distill run", help("distill", "run"), strings.Fields(run[:strings.Index(run, "\n")]))
	merge := strings.Join(container(t, o.jobs["distill-big-merge"].Spec.Template.Spec, "merge").Args, " ")
	check("distill merge", help("distill", "merge"), []string{"--out"})
	check("distill export", help("distill", "export"), strings.Fields(merge[strings.Index(merge, "distill export")+len("distill export"):]))
}

func container(t *testing.T, pod corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range pod.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

func envVar(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func containerPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %s", c.Name, name)
	return 0
}

// checkMounts: the container mounts at path a volume of the
// PersistentVolumeClaim the manifests define.
func checkMounts(t *testing.T, o objects, pod corev1.PodSpec, c corev1.Container, path string) {
	t.Helper()
	v := mountedVolume(t, pod, c, path)
	if v.PersistentVolumeClaim == nil || o.claims[v.PersistentVolumeClaim.ClaimName] == nil {
		t.Errorf("%s of container %s is not a claim the manifests define: %+v", path, c.Name, v.VolumeSource)
	}
}

func mountedConfigMap(t *testing.T, o objects, pod corev1.PodSpec, c corev1.Container, path string) *corev1.ConfigMap {
	t.Helper()
	v := mountedVolume(t, pod, c, path)
	if v.ConfigMap == nil || o.configMaps[v.ConfigMap.Name] == nil {
		t.Fatalf("%s of container %s is not a ConfigMap the manifests define", path, c.Name)
	}
	return o.configMaps[v.ConfigMap.Name]
}

func mountedVolume(t *testing.T, pod corev1.PodSpec, c corev1.Container, path string) corev1.Volume {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath != path {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name {
				return v
			}
		}
		t.Fatalf("mount %s names no volume of the pod", m.Name)
	}
	t.Fatalf("container %s mounts nothing at %s", c.Name, path)
	return corev1.Volume{}
}

// flags maps --name=value and --name value arguments to name -> value
// ("true" for a flag without a value).
func flags(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok {
			value = "true"
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value = args[i+1]
				i++
			}
		}
		out[name] = value
	}
	return out
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
