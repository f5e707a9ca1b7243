#!/usr/bin/env bash
# Every C and C++ example in the README is a verbatim excerpt (indentation aside) of a sample that
# the build compiles with warnings as errors and the tests run, so no README example can rot, ignore
# a [[nodiscard]] Status or fail to compile unnoticed.
#   tests/readme_examples.sh README.md SAMPLES_DIR
set -euo pipefail
readme=$1
samples=$2

strip() { sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$@"; }

haystacks=()
while IFS= read -r -d '' f; do haystacks+=("$(strip "$f")"); done \
  < <(find "$samples" \( -name '*.c' -o -name '*.cpp' \) -print0 | sort -z)
((${#haystacks[@]})) || { echo "no sample sources under $samples"; exit 1; }

blocks=0 missing=0 block="" in_block=0 start=0 n=0
while IFS= read -r line; do
  n=$((n + 1))
  if ((in_block)); then
    if [[ $line == '```' ]]; then
      in_block=0 blocks=$((blocks + 1))
      needle=$(printf '%s' "$block" | strip)
      found=0
      for h in "${haystacks[@]}"; do [[ $h == *"$needle"* ]] && { found=1; break; }; done
      ((found)) || { echo "README.md:$start: this example is not an excerpt of any sample"; missing=$((missing + 1)); }
    else
      block+="$line"$'\n'
    fi
  elif [[ $line == '```cpp' || $line == '```c' ]]; then
    in_block=1 block="" start=$n
  fi
done < "$readme"
((blocks > 0)) || { echo "no C or C++ example found in $readme"; exit 1; }
((missing == 0)) || exit 1
echo "README examples: all $blocks are excerpts of compiled, tested samples"
