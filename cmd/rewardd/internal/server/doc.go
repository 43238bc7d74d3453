// Package server owns rewardd's HTTP service: the trainers' reward protocols
// (/get_reward for OpenRLHF, /score for slime, /verify for NeMo Gym,
// /v1/score and /v1/score_group), the corpus as an Open Reward Standard
// environment (ors.go: its catalog, its sessions bounded in count and idle
// time, the answer tool streamed as server-sent events), their label and
// query decoding and pooled JSON codecs,
// admission (the in-flight byte budget, the queue), the judge's circuit
// breaker, /healthz and /metrics, and the corpus index that finds a
// problem's rubric by id, text or prompt. It scores with package reward and
// judges with package reward/judge; only cmd/rewardd imports it (the Go
// toolchain enforces that: it is internal to cmd/rewardd), as Go's own
// cmd/go/internal packages serve only the go command.
package server
