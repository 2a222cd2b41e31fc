// placeholder: replaced by the oracle engine
