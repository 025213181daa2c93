// Command dm-helm-render renders Helm charts offline for dm: the charts of
// dm expand, dm template and the other commands that render without a
// cluster. It answers only render requests of package helmproxy, on stdin
// and stdout, and links Helm's engine alone: none of dm-helm's chart
// downloaders, lint rules and cluster client, whose initialisation would
// be paid at every start (a chart's expansion is mostly two programs'
// start-up). dm starts it; it is not meant to be run by hand. Without it,
// dm-helm renders.
package main

import (
	"os"

	"github.com/dmhq/dm/internal/expand/helmproxy"
	"github.com/dmhq/dm/internal/expand/helmrender"
)

func main() {
	os.Exit(helmproxy.Main("dm-helm-render", &helmrender.Renderer{}))
}
