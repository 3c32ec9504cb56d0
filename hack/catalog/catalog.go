package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// The schemas and property types of OLM's file-based catalogs, as operator-registry's declcfg
// names them (alpha/declcfg, alpha/property).
const (
	schemaPackage = "olm.package"
	schemaChannel = "olm.channel"
	schemaBundle  = "olm.bundle"

	propertyPackage      = "olm.package"
	propertyGVK          = "olm.gvk"
	propertyBundleObject = "olm.bundle.object"
)

// The bundle's annotations (metadata/annotations.yaml) that name its package and channels.
const (
	annotationPackage        = "operators.operatorframework.io.bundle.package.v1"
	annotationChannels       = "operators.operatorframework.io.bundle.channels.v1"
	annotationDefaultChannel = "operators.operatorframework.io.bundle.channel.default.v1"
	// annotationSkipRange is the CSV's annotation of the versions it replaces besides spec.replaces.
	annotationSkipRange = "olm.skipRange"
)

// bundle is what the catalog needs of a bundle directory.
type bundle struct {
	pkg            string
	channels       []string
	defaultChannel string
	// name, version, replaces and skipRange are the CSV's.
	name, version, replaces, skipRange string
	// objects are the manifests as JSON, in the order of their file names.
	objects [][]byte
	// gvks are the APIs the bundle's CRDs serve.
	gvks []gvk
}

type gvk struct {
	Group   string `json:"group"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// readBundle reads the annotations and every manifest of dir.
func readBundle(dir string) (*bundle, error) {
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := readYAML(filepath.Join(dir, "metadata", "annotations.yaml"), &meta); err != nil {
		return nil, err
	}
	b := &bundle{
		pkg:            meta.Annotations[annotationPackage],
		defaultChannel: meta.Annotations[annotationDefaultChannel],
	}
	if c := meta.Annotations[annotationChannels]; c != "" {
		b.channels = strings.Split(c, ",")
	}
	if b.pkg == "" || len(b.channels) == 0 || b.defaultChannel == "" {
		return nil, fmt.Errorf("%s: the package, channels and default channel annotations are required", dir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	for _, file := range files {
		if err := b.addManifest(file); err != nil {
			return nil, err
		}
	}
	if b.name == "" {
		return nil, fmt.Errorf("%s: no ClusterServiceVersion in manifests/", dir)
	}
	return b, nil
}

// addManifest adds the object of file, and what the catalog says of it: the CSV's name and
// version, a CRD's served kinds.
func (b *bundle) addManifest(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	obj, err := yaml.YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var head struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			// A CSV's.
			Version  string `json:"version"`
			Replaces string `json:"replaces"`
			// A CRD's.
			Group string `json:"group"`
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
			Versions []struct {
				Name   string `json:"name"`
				Served bool   `json:"served"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(obj, &head); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	switch head.Kind {
	case "ClusterServiceVersion":
		if b.name != "" {
			return fmt.Errorf("%s: a second ClusterServiceVersion (%s and %s)", file, b.name, head.Metadata.Name)
		}
		b.name, b.version, b.replaces = head.Metadata.Name, head.Spec.Version, head.Spec.Replaces
		b.skipRange = head.Metadata.Annotations[annotationSkipRange]
	case "CustomResourceDefinition":
		for _, v := range head.Spec.Versions {
			if v.Served {
				b.gvks = append(b.gvks, gvk{Group: head.Spec.Group, Kind: head.Spec.Names.Kind, Version: v.Name})
			}
		}
	}
	b.objects = append(b.objects, obj)
	return nil
}

func readYAML(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// The catalog's documents, as operator-registry's declcfg writes them.
type (
	pkgDoc struct {
		Schema         string `json:"schema"`
		Name           string `json:"name"`
		DefaultChannel string `json:"defaultChannel"`
	}
	channelDoc struct {
		Schema  string         `json:"schema"`
		Name    string         `json:"name"`
		Package string         `json:"package"`
		Entries []channelEntry `json:"entries"`
	}
	channelEntry struct {
		Name      string `json:"name"`
		Replaces  string `json:"replaces,omitempty"`
		SkipRange string `json:"skipRange,omitempty"`
	}
	bundleDoc struct {
		Schema     string     `json:"schema"`
		Name       string     `json:"name"`
		Package    string     `json:"package"`
		Image      string     `json:"image"`
		Properties []property `json:"properties"`
	}
	property struct {
		Type  string `json:"type"`
		Value any    `json:"value"`
	}
	packageValue struct {
		PackageName string `json:"packageName"`
		Version     string `json:"version"`
	}
	// objectValue holds a manifest; encoding/json writes []byte as base64, as declcfg does.
	objectValue struct {
		Data []byte `json:"data"`
	}
)

// render is the catalog of bundles, oldest first (each later one an upgrade of those before it):
// the package, whose default channel is the newest bundle's; one document per channel (sorted)
// whose entries are the bundles in that channel, in the order given; and each bundle, each a JSON
// document indented as opm writes them.
func render(bundles ...*bundle) ([]byte, error) {
	if len(bundles) == 0 {
		return nil, errors.New("no bundle")
	}
	newest := bundles[len(bundles)-1]
	docs := []any{pkgDoc{Schema: schemaPackage, Name: newest.pkg, DefaultChannel: newest.defaultChannel}}
	entries := map[string][]channelEntry{}
	names := map[string]bool{}
	for _, b := range bundles {
		if !slices.Contains(b.channels, b.defaultChannel) {
			return nil, fmt.Errorf("%s: the default channel %q is not one of the bundle's channels %v", b.name, b.defaultChannel, b.channels)
		}
		if b.version == "" {
			return nil, fmt.Errorf("%s: the ClusterServiceVersion has no spec.version", b.name)
		}
		if b.pkg != newest.pkg {
			return nil, fmt.Errorf("%s is of package %q, %s of %q: a catalog here holds one package", b.name, b.pkg, newest.name, newest.pkg)
		}
		if names[b.name] {
			return nil, fmt.Errorf("bundle %s given twice", b.name)
		}
		names[b.name] = true
		for _, c := range slices.Compact(slices.Sorted(slices.Values(b.channels))) {
			entries[c] = append(entries[c], channelEntry{Name: b.name, Replaces: b.replaces, SkipRange: b.skipRange})
		}
	}
	for _, c := range slices.Sorted(maps.Keys(entries)) {
		docs = append(docs, channelDoc{Schema: schemaChannel, Name: c, Package: newest.pkg, Entries: entries[c]})
	}
	for _, b := range bundles {
		docs = append(docs, bundleDoc{Schema: schemaBundle, Name: b.name, Package: b.pkg, Properties: b.properties()})
	}

	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", "    ")
	enc.SetEscapeHTML(false)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
	}
	return out.Bytes(), nil
}

// properties are the bundle's olm.package, olm.gvk (sorted) and olm.bundle.object properties.
func (b *bundle) properties() []property {
	props := []property{{Type: propertyPackage, Value: packageValue{PackageName: b.pkg, Version: b.version}}}
	gvks := slices.Clone(b.gvks)
	slices.SortFunc(gvks, func(x, y gvk) int {
		return strings.Compare(x.Group+"/"+x.Kind+"/"+x.Version, y.Group+"/"+y.Kind+"/"+y.Version)
	})
	for _, g := range gvks {
		props = append(props, property{Type: propertyGVK, Value: g})
	}
	for _, obj := range b.objects {
		props = append(props, property{Type: propertyBundleObject, Value: objectValue{Data: obj}})
	}
	return props
}
