#!/usr/bin/env bash
# goal.txt -> per shape: off medians and on medians per process
awk '/^== process/{p++} /^[a-z](-[a-z]+)? +[a-z]/ && /\|/ {split($0,f,"|"); split(f[2],o," "); split(f[3],n," "); key=$1; off[key]=off[key] " " o[2]; on[key]=on[key] " " n[2]; if(!(key in seen)){seen[key]=1; order[++k]=key}} END{for(i=1;i<=k;i++){key=order[i]; printf "%-8s off:%s | on:%s\n", key, off[key], on[key]}}' "$1"
