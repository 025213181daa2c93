package server

import "github.com/dmhq/dm/internal/index"

// Forget drops what the server keeps of g, a registry no longer served:
// what is cached of its identity's content (search, lint, expansion
// caches, encoded resolutions), its queued example tests and, unless another registry of its
// key serves in its place (an object opened anew with a rotated token),
// what is kept under its key (catalog pages, example results, metrics
// series). Its memory then returns with the registry's: nothing here
// refers to it any more.
func (s *Server) Forget(g *index.Registry) {
	s.svc.Forget(g.ID())
	s.examples.Drop(g)
	// The encoded answers refer to their versions: start anew, as the
	// next resolve would on seeing the resolver's generation move.
	s.hot.reset(s.resolver.Generation())
	if cur, ok := s.resolver.ByKey(g.Key()); ok && cur != g {
		return
	}
	s.catalog.Forget(g.Key())
	s.metrics.Forget(g.Key())
}
