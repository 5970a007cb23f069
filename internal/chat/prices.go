package chat

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// Price is USD per million tokens, in and out.
type Price struct {
	In  float64 `json:"input"`
	Out float64 `json:"output"`
}

// Cost is the USD cost of u.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.In)*p.In + float64(u.Out)*p.Out) / 1e6
}

// Prices maps a model name to its price. A listed name is also the family
// of its dated snapshots (claude-sonnet-4-6-20260217, gpt-5.4-mini-2026-03-17
// are priced as claude-sonnet-4-6, gpt-5.4-mini); nothing else is matched:
// claude-opus-4-6 is not a claude-opus-4 (docs/chat.md "Chat from a terminal").
type Prices map[string]Price

// DefaultPrices are list prices in USD per million tokens as published by
// OpenAI and Anthropic; they change — override them with LLM_PRICES. A model
// not listed (among them the defaults newer than the published lists) costs
// "unknown" until LLM_PRICES names it.
func DefaultPrices() Prices {
	return Prices{
		"gpt-5.5":           {5, 30},
		"gpt-5.4":           {2.50, 15},
		"gpt-5.4-mini":      {0.75, 4.50},
		"gpt-5.4-nano":      {0.20, 1.25},
		"gpt-5":             {1.25, 10},
		"gpt-5-mini":        {0.25, 2},
		"gpt-5-nano":        {0.05, 0.40},
		"gpt-4.1":           {2, 8},
		"gpt-4.1-mini":      {0.40, 1.60},
		"gpt-4.1-nano":      {0.10, 0.40},
		"gpt-4o":            {2.50, 10},
		"gpt-4o-mini":       {0.15, 0.60},
		"o3":                {2, 8},
		"o4-mini":           {1.10, 4.40},
		"claude-opus-4-7":   {5, 25},
		"claude-opus-4-6":   {5, 25},
		"claude-opus-4-5":   {5, 25},
		"claude-opus-4-1":   {15, 75},
		"claude-opus-4":     {15, 75},
		"claude-sonnet-4-6": {3, 15},
		"claude-sonnet-4-5": {3, 15},
		"claude-sonnet-4":   {3, 15},
		"claude-haiku-4-5":  {1, 5},
		"claude-3-7-sonnet": {3, 15},
		"claude-3-5-haiku":  {0.80, 4},
	}
}

// LoadPrices merges LLM_PRICES over the defaults: inline JSON (it starts with
// "{") or the path of a JSON file, {"model": {"input": 0.4, "output": 1.6}}.
func LoadPrices(spec string) (Prices, error) {
	p := DefaultPrices()
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return p, nil
	}
	b := []byte(spec)
	if !strings.HasPrefix(spec, "{") {
		var err error
		if b, err = os.ReadFile(spec); err != nil {
			return nil, &ConfigError{"LLM_PRICES", err.Error(), "a JSON file or inline JSON, {\"model\":{\"input\":0.4,\"output\":1.6}} in USD per million tokens"}
		}
	}
	var extra map[string]Price
	if err := json.Unmarshal(b, &extra); err != nil {
		return nil, &ConfigError{"LLM_PRICES", "not a JSON object of prices: " + err.Error(), "{\"model\":{\"input\":0.4,\"output\":1.6}} in USD per million tokens"}
	}
	for m, pr := range extra {
		if pr.In < 0 || pr.Out < 0 {
			return nil, &ConfigError{"LLM_PRICES", fmt.Sprintf("negative price for %q", m), "prices are USD per million tokens"}
		}
		p[m] = pr
	}
	return p, nil
}

// Lookup finds a model's price: by its exact name, else by the family its
// dated snapshot belongs to. A model on an OpenAI-compatible (local) server
// not in the table costs nothing; any other model not in it is unknown.
func (p Prices) Lookup(kind, model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	if family, ok := snapshotFamily(model); ok {
		if pr, ok := p[family]; ok {
			return pr, true
		}
	}
	if kind == KindOpenAICompatible {
		return Price{}, true
	}
	return Price{}, false
}

// snapshotFamily strips a snapshot date from a model id: Anthropic's
// -YYYYMMDD and OpenAI's -YYYY-MM-DD.
func snapshotFamily(model string) (string, bool) {
	for _, layout := range []string{"-20060102", "-2006-01-02"} {
		n := len(layout)
		if len(model) > n {
			if _, err := time.Parse(layout, model[len(model)-n:]); err == nil {
				return model[:len(model)-n], true
			}
		}
	}
	return "", false
}
