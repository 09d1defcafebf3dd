"""The agent's context as layers see it: the blocks they contribute (``blocks``) and how full it
is (``usage``)."""
