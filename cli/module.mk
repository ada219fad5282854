# cli: build rules (filled in by the component)
