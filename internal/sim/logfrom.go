package sim

// LogFrom returns a copy of the request log from its i-th entry on (none
// when i is past its end): for a reader that follows the log as it grows
// without copying all of it each time. It is empty unless Config.KeepLog.
func (s *Server) LogFrom(i int) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.log) {
		return nil
	}
	return append([]Entry(nil), s.log[max(i, 0):]...)
}
