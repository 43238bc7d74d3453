package schema

import "testing"

func TestIsStepHeader(t *testing.T) {
	for line, want := range map[string]bool{
		"### Step 1: Add.\n": true, "## Step 0:": true, "  #### Step 12 :x": true, "###Step 2:": true, "\t## Step  3\t:": true,
		"##### Step 1:": false, "# Step 1:": false, "### Step:": false, "### Step1:": false, "### step 1:": false,
		"### Step 1": false, "x ### Step 2:": false, "": false, "### Step -1:": false,
	} {
		if got := IsStepHeader(line); got != want {
			t.Errorf("IsStepHeader(%q) = %v, want %v", line, got, want)
		}
	}
	if n := CountSteps("Plan.\n### Step 0: a\n### Step 0: b\n## Step 7: c\nnot ### Step 8:\n"); n != 3 {
		t.Errorf("CountSteps = %d, want 3 (numbers repeat and skip; a header starts its line)", n)
	}
}
