# netns.sh: two "hosts" on one machine for the multi-host tests, sourced by
# scripts/test.sh (the ofi netns test) and scripts/twohosts.sh.
#
# veth_join A B VA VB NET: with namespace A already added (its `ip netns
# add` is the caller's test for root or CAP_SYS_ADMIN, and its trap
# removes A and B), adds namespace B and joins them by a veth pair: VA in
# A at NET.1/24, VB in B at NET.2/24, both links and both loopbacks up.
veth_join() {
  local a=$1 b=$2 va=$3 vb=$4 net=$5
  ip netns add "$b"
  ip link add "$va" type veth peer name "$vb"
  ip link set "$va" netns "$a"
  ip link set "$vb" netns "$b"
  ip -n "$a" addr add "$net.1/24" dev "$va"
  ip -n "$b" addr add "$net.2/24" dev "$vb"
  ip -n "$a" link set lo up
  ip -n "$b" link set lo up
  ip -n "$a" link set "$va" up
  ip -n "$b" link set "$vb" up
}
