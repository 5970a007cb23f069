package main

import (
	"bytes"
	_ "embed"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
)

// iconPNG is the bundle's icon (512×512, the size Claude Desktop displays
// best), committed so a release needs no drawing step. It is DrawIcon's
// output: TestIconIsDrawIcon compares the pixels, and
// `go run ./internal/release -write-icon internal/release/icon.png`
// redraws it after a change.
//
//go:embed icon.png
var iconPNG []byte

// IconSize is the icon's width and height in pixels.
const IconSize = 512

// DrawIcon draws the icon: a database cylinder on a blue rounded square,
// anti-aliased by 4×4 supersampling.
func DrawIcon() *image.NRGBA {
	const ss = 4
	img := image.NewNRGBA(image.Rect(0, 0, IconSize, IconSize))
	for y := range IconSize {
		for x := range IconSize {
			var r, g, b, a float64
			for sy := range ss {
				for sx := range ss {
					c := iconColor(float64(x)+(float64(sx)+0.5)/ss, float64(y)+(float64(sy)+0.5)/ss)
					ca := float64(c.A) / 255
					r += float64(c.R) * ca
					g += float64(c.G) * ca
					b += float64(c.B) * ca
					a += ca
				}
			}
			if a == 0 {
				continue
			}
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(r/a + 0.5), G: uint8(g/a + 0.5), B: uint8(b/a + 0.5), A: uint8(a/(ss*ss)*255 + 0.5)})
		}
	}
	return img
}

// iconColor is the colour at a point of the icon.
func iconColor(x, y float64) color.NRGBA {
	const (
		size, radius = IconSize, 104.0
		cx, rx, ry   = 256.0, 132.0, 40.0
		top, bottom  = 150.0, 362.0
		band         = 7.0
	)
	// Outside the rounded square: transparent.
	qx := math.Max(math.Abs(x-size/2)-(size/2-radius), 0)
	qy := math.Max(math.Abs(y-size/2)-(size/2-radius), 0)
	if qx*qx+qy*qy > radius*radius {
		return color.NRGBA{}
	}
	t := y / size
	bg := color.NRGBA{R: uint8(30 - 10*t), G: uint8(150 - 40*t), B: uint8(243 - 40*t), A: 255}
	inEllipse := func(cy, rx, ry float64) bool {
		dx, dy := (x-cx)/rx, (y-cy)/ry
		return dx*dx+dy*dy <= 1
	}
	body := (math.Abs(x-cx) <= rx && y >= top && y <= bottom) || inEllipse(top, rx, ry) || inEllipse(bottom, rx, ry)
	if !body {
		return bg
	}
	// The top face, a lighter ellipse inside the lid.
	if inEllipse(top, rx-16, ry-9) {
		return color.NRGBA{R: 187, G: 222, B: 251, A: 255}
	}
	// Two bands: the lower arcs of ellipses one and two thirds down.
	for _, cy := range []float64{top + (bottom-top)/3, top + 2*(bottom-top)/3} {
		if d := (x - cx) / rx; math.Abs(d) < 1 {
			arc := cy + ry*math.Sqrt(1-d*d)
			if math.Abs(y-arc) < band {
				return bg
			}
		}
	}
	return color.NRGBA{R: 255, G: 255, B: 255, A: 255}
}

// WriteIcon encodes DrawIcon's image as a PNG file.
func WriteIcon(path string) error {
	var b bytes.Buffer
	if err := png.Encode(&b, DrawIcon()); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
