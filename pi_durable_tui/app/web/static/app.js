// The web page's client (issue 15); filled in by the next stage.
