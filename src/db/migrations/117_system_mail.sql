-- Mail Mailroom sends to a person of a team (an invite, a password reset) is an email like any
-- other, with what its link is made from when it is sent ({ kind, userId, nonce } or
-- { kind, resetId }): the link's token is signed with SECRET then, and never stored.
ALTER TABLE emails ADD COLUMN system_link jsonb;
