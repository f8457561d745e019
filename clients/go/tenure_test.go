package leasehold

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The vectors src/tenure.ts is tested against (test/vectors/tenure.json): one rule, two languages.

type vecRecord struct {
	Holder    *string `json:"holder"`
	Term      int64   `json:"term"`
	LeaseMs   int64   `json:"leaseMs"`
	RenewedAt int64   `json:"renewedAt"`
}

func (v vecRecord) tenure() TenureRecord {
	holder := ""
	if v.Holder != nil {
		holder = *v.Holder
	}
	return TenureRecord{Holder: holder, Term: v.Term, LeaseMs: v.LeaseMs, RenewedAt: v.RenewedAt}
}

type vecTenure struct {
	Holder string `json:"holder"`
	Term   int64  `json:"term"`
}

type tenureVectors struct {
	TenureOver []struct {
		Tenure vecTenure `json:"tenure"`
		Record vecRecord `json:"record"`
		Over   bool      `json:"over"`
	} `json:"tenureOver"`
	Stamps []struct {
		Record    vecRecord `json:"record"`
		WallNow   int64     `json:"wallNow"`
		MaxSkewMs int64     `json:"maxSkewMs"`
		Free      bool      `json:"free"`
		FreeInMs  int64     `json:"freeInMs"`
	} `json:"stamps"`
	ExpiresAt []struct {
		Record    vecRecord `json:"record"`
		FirstSeen int64     `json:"firstSeen"`
		WallNow   int64     `json:"wallNow"`
		MaxSkewMs int64     `json:"maxSkewMs"`
		ExpiresAt int64     `json:"expiresAt"`
	} `json:"expiresAt"`
	Judge []struct {
		Why    string     `json:"why"`
		Tenure *vecTenure `json:"tenure"`
		Seen   struct {
			Record    *vecRecord `json:"record"`
			FirstSeen int64      `json:"firstSeen"`
		} `json:"seen"`
		Now        int64 `json:"now"`
		WallNow    int64 `json:"wallNow"`
		MaxSkewMs  int64 `json:"maxSkewMs"`
		FallbackMs int64 `json:"fallbackMs"`
		Verdict    struct {
			Kind  string `json:"kind"`
			Until int64  `json:"until"`
		} `json:"verdict"`
	} `json:"judge"`
}

func TestTenureVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "test", "vectors", "tenure.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v tenureVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.TenureOver) == 0 || len(v.Stamps) == 0 || len(v.ExpiresAt) == 0 || len(v.Judge) == 0 {
		t.Fatal("a list of vectors is empty")
	}
	for _, c := range v.TenureOver {
		if got := TenureOver(Tenure{Holder: c.Tenure.Holder, Term: c.Tenure.Term}, c.Record.tenure()); got != c.Over {
			t.Errorf("TenureOver(%+v, %+v) = %v, want %v", c.Tenure, c.Record, got, c.Over)
		}
	}
	for _, c := range v.Stamps {
		if got := FreeByStamps(c.Record.tenure(), c.WallNow, c.MaxSkewMs); got != c.Free {
			t.Errorf("FreeByStamps(%+v, %d) = %v, want %v", c.Record, c.WallNow, got, c.Free)
		}
		if got := FreeInMs(c.Record.tenure(), c.WallNow, c.MaxSkewMs); got != c.FreeInMs {
			t.Errorf("FreeInMs(%+v, %d) = %d, want %d", c.Record, c.WallNow, got, c.FreeInMs)
		}
	}
	for _, c := range v.ExpiresAt {
		if got := ExpiresAt(c.Record.tenure(), c.FirstSeen, c.WallNow, c.MaxSkewMs); got != c.ExpiresAt {
			t.Errorf("ExpiresAt(%+v) = %d, want %d", c, got, c.ExpiresAt)
		}
	}
	for _, c := range v.Judge {
		var tenure *Tenure
		if c.Tenure != nil {
			tenure = &Tenure{Holder: c.Tenure.Holder, Term: c.Tenure.Term}
		}
		var record *TenureRecord
		if c.Seen.Record != nil {
			r := c.Seen.Record.tenure()
			record = &r
		}
		got := Judge(tenure, record, c.Seen.FirstSeen, c.Now, c.WallNow, c.MaxSkewMs, c.FallbackMs)
		if string(got.Kind) != c.Verdict.Kind || got.Until != c.Verdict.Until {
			t.Errorf("%s: Judge = %+v, want %+v", c.Why, got, c.Verdict)
		}
	}
}
